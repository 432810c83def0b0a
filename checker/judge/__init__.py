"""Stage 3, judge: rules over a layout and its recomputed points, each finding under a stable rule id.

The public MLPerf Endpoints rules (rules/, parameters from rule sets: ruleset), the rules only the portal can
run (portal_rules), claimed against recomputed (claimed_vs_recomputed), extensions of a published curve
(extension), re-measurements (remeasure) and how a result's numbers count as verified (verification).
"""
