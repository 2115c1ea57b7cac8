# Emily's tests. Without Nx (the default in this repository, and on CI)
# the suite runs the conformance corpus and the NIF tests through
# Emily.Native; with EMILY_NX_PATH it also runs Emily.Backend's tests and
# Nx's own doctests on Emily.Backend (see README.md).
:ets.new(:emily_corpus_stats, [:named_table, :public, :set])

# The corpus and Nx's doctests are the reference's bits: dot and conv run
# at HIGHEST precision for the whole suite (FAST, the VM's default, is
# what settings_test checks and the tests that ask for it get).
Application.put_env(:emily, :initial_dot_precision, Emily.dot_precision())
Emily.put_dot_precision(:highest)

nx? = Code.ensure_loaded?(Nx)

unless nx? do
  IO.puts("""
  Nx is not available: Emily.Backend's tests and Nx's doctests are skipped \
  (the :nx tag). Set EMILY_NX_PATH=/path/to/nx/nx (a checkout of Nx's \
  repository, with complex and telemetry beside it) to run them; see README.md.\
  """)
end

ExUnit.after_suite(fn _ -> Emily.Test.CorpusCase.print_summary() end)
# the debug-check tests need Emily.Backend compiled with the checks on
debug_checks? = Application.get_env(:emily, :debug_bounds_check, false)
exclude = if(nx?, do: [], else: [:nx]) ++ if(debug_checks?, do: [], else: [:debug_checks])

# GPU tests only where the engine finds a GPU
cuda? = Enum.any?(Emily.Native.devices(), &match?({:cuda, _}, &1))
exclude = if cuda?, do: exclude, else: exclude ++ [:cuda]

# Two-node tests (Emily tensors sent to a :peer node) need distribution;
# they are excluded, and the reason printed, only where it cannot start
exclude =
  case Emily.Test.Peer.ensure_distribution() do
    :ok ->
      exclude

    {:error, reason} ->
      IO.puts("The :distributed tests (two nodes) are skipped: #{reason}")
      exclude ++ [:distributed]
  end

# EMILY_DEFN_COMPILER=1: every defn (Nx's own defn functions, Nx.Random,
# the doctests' and the package tests') compiles with Emily.Compiler
if nx? and System.get_env("EMILY_DEFN_COMPILER") in ["1", "true"] do
  Nx.Defn.global_default_options(compiler: Emily.Compiler)
  IO.puts("defn compiler: Emily.Compiler (EMILY_DEFN_COMPILER)")
  Emily.Test.CompilerCounts.start()

  :telemetry.attach_many(
    "emily-test-compiler-counts",
    [[:emily, :compiler, :compile], [:emily, :compiler, :fallback]],
    &Emily.Test.CompilerCounts.handle/4,
    nil
  )

  ExUnit.after_suite(fn _ -> Emily.Test.CompilerCounts.print() end)
end

# Nx doctests whose printed output Emily is not expected to reproduce, each
# with its reason (test/support/nx_exclusions.ex)
exclude = exclude ++ Emily.Test.NxExclusions.filters()
if nx?, do: Emily.Test.NxExclusions.print()
ExUnit.start(exclude: exclude)
