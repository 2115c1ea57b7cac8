defmodule Emily.ConformanceSweepTest do
  # the systematic sweep: callbacks x dtypes x shapes x options, edge values
  use Emily.Test.CorpusCase, file: "sweep.jsonl"
end
