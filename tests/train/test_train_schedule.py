"""The learning rate per epoch: the post's linear decay, and the fast preset's warm-up and cosine."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from envcheck.train.config import PRESETS
from envcheck.train.schedule import poly_decay, schedule_for, warmup_cosine


def test_the_posts_schedule_values():
    lr = schedule_for(PRESETS["post"])
    assert lr(0) == pytest.approx(5e-3)
    assert lr(35) == pytest.approx(2.5e-3)
    assert lr(69) == pytest.approx(5e-3 / 70)
    assert lr(70) == 0.0
    steps = [lr(e) - lr(e + 1) for e in range(70)]
    assert steps == pytest.approx([5e-3 / 70] * 70)  # linear: the same drop every epoch


@given(epochs=st.integers(1, 500), base=st.floats(1e-6, 10), epoch=st.integers(0, 600))
def test_poly_decay_stays_between_zero_and_the_base_rate_and_never_rises(epochs, base, epoch):
    value = poly_decay(epoch, epochs=epochs, base_lr=base)
    assert 0.0 <= value <= base
    assert poly_decay(epoch + 1, epochs=epochs, base_lr=base) <= value


def test_the_fast_preset_warms_up_then_decays_to_zero():
    recipe = PRESETS["fast"]
    lr = schedule_for(recipe)
    warmup = [lr(e) for e in range(recipe.warmup_epochs + 1)]
    assert warmup == sorted(warmup) and warmup[-1] == pytest.approx(recipe.learning_rate)
    after = [lr(e) for e in range(recipe.warmup_epochs, recipe.epochs + 1)]
    assert all(a >= b for a, b in zip(after, after[1:]))
    assert lr(recipe.epochs - 1) < 0.01 * recipe.learning_rate and lr(recipe.epochs) == 0.0
    assert warmup_cosine(0, epochs=10, base_lr=1.0, warmup_epochs=0) == pytest.approx(1.0)
