# Emily's tests. Without Nx (the default in this repository, and on CI)
# the suite runs the conformance corpus and the NIF tests through
# Emily.Native; with EMILY_NX_PATH it also runs Emily.Backend's tests and
# Nx's own doctests on Emily.Backend (see README.md).
:ets.new(:emily_corpus_stats, [:named_table, :public, :set])

nx? = Code.ensure_loaded?(Nx)

unless nx? do
  IO.puts("""
  Nx is not available: Emily.Backend's tests and Nx's doctests are skipped \
  (the :nx tag). Set EMILY_NX_PATH=/path/to/nx/nx (a checkout of Nx's \
  repository, with complex and telemetry beside it) to run them; see README.md.\
  """)
end

ExUnit.after_suite(fn _ -> Emily.Test.CorpusCase.print_summary() end)
ExUnit.start(exclude: if(nx?, do: [], else: [:nx]))
