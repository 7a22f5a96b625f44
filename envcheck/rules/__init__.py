"""The rule catalogue: one module per link of the chain, each rule small, registered with a stable
id by ``engine.rule``. ``envcheck.verdict.judge`` runs them and walks the chain to a verdict."""

from __future__ import annotations

from envcheck.rules.engine import RULE_MODULES, RULES, Context, Hit, Rule, evaluate, load_rule_modules, rule

__all__ = ["RULES", "RULE_MODULES", "Context", "Hit", "Rule", "evaluate", "load_rule_modules", "rule"]
