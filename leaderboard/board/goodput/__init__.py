"""The SLO finder per request: for every published result, the best measured point whose share of good requests
(checker.recompute.goodput: TTFT <= X ms and TPOT <= Y ms per request, failed requests are violations) meets the buyer's
attainment goal, ranked by token goodput. Computed from the per-sample arrays kept per point when its check ran
(PointMetric.samples_key), never from percentiles and never by re-reading a raw log.

By topic:
- `samples`: which per-sample arrays the published results' points have, and reading one back;
- `targets`: what a buyer asks (GoodputTargets, Prices), the conventions said with every answer, and the
  normalised and priced figures of a row;
- `index`: GoodputIndex, the samples of every ranked point of one benchmark in flat arrays, and the ranking of a
  query over them (GoodputRows: its rows, built when read);
- `tables`: the index of a public snapshot as a table file the web processes map (written by the publish
  worker), and the answer cache.
"""
