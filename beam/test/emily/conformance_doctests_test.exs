defmodule Emily.ConformanceDoctestsTest do
  # every backend call recorded while Nx's doctests ran on Nx.BinaryBackend
  use Emily.Test.CorpusCase, file: "doctests.jsonl"
end
