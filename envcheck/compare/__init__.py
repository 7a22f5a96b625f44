"""Comparing machines: two snapshots (``envcheck diff``) and many (``envcheck fleet``).

facets   the facts that matter, per link of the chain, and what is noise: written once, read by
         both commands
flat     a snapshot as a flat, noise-free mapping of named facts
diff     what differs between two snapshots, the differences that explain the verdicts first
fleet    many snapshots grouped by verdict and by the facts that matter, the odd ones named
"""
