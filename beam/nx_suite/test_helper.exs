# scripts/nx_suite's test helper: Nx's own test_helper.exs (copied in as
# nx_test_helper.exs) run with a global default backend chosen by
# EMILY_SUITE_BACKEND (emily, the default, or binary), on this node and on
# the peer nodes Nx's helper starts for its distributed tests. On Emily,
# the tests in not_applicable.exs are excluded, each with its reason.
backend =
  case System.get_env("EMILY_SUITE_BACKEND", "emily") do
    "emily" -> {Emily.Backend, device: :cpu}
    "binary" -> Nx.BinaryBackend
    other -> raise "EMILY_SUITE_BACKEND must be emily or binary, got #{inspect(other)}"
  end

# The backend becomes the global default once every test file is compiled:
# Nx's tests build tensors in module attributes at compile time (@tensor
# Nx.tensor(...)), and a tensor whose data holds a reference (Emily's,
# EXLA's, Torchx's) cannot be escaped into compiled code. Those tensors
# stay on Nx.BinaryBackend; every operation that mixes them with the
# tests' own tensors runs on the default backend. ExUnit starts its
# formatters in the runner before the first test; this one holds the runner
# until ExUnit's server has every module (mix test compiles the files while
# the runner starts), then switches the backend.
defmodule EmilyNxSuite.DefaultBackend do
  @moduledoc false
  use GenServer

  def init(_opts) do
    wait_until_loaded()
    Nx.global_default_backend(:persistent_term.get(__MODULE__))
    {:ok, nil}
  end

  defp wait_until_loaded do
    case :sys.get_state(ExUnit.Server) do
      %{loaded: loaded} when is_integer(loaded) ->
        Process.sleep(20)
        wait_until_loaded()

      _ ->
        :ok
    end
  end

  def handle_cast(_event, state), do: {:noreply, state}
end

:persistent_term.put(EmilyNxSuite.DefaultBackend, backend)

# (after the module above: Nx's helper starts distribution, which renames
# this node, and Elixir's compiler cannot define modules after that)
Code.require_file("nx_test_helper.exs", __DIR__)

ExUnit.configure(
  formatters:
    Keyword.get(ExUnit.configuration(), :formatters, [ExUnit.CLIFormatter]) ++
      [EmilyNxSuite.DefaultBackend]
)

for node <- Node.list([:visible, :hidden]) do
  :erpc.call(node, Nx, :global_default_backend, [backend])
end

{%{reasons: reasons, tests: not_applicable, rerun_modules: rerun_modules}, _} =
  Code.eval_file("not_applicable.exs", __DIR__)

nx_version = Application.spec(:nx, :vsn) |> to_string()

listed =
  for {versions, name, category} <- not_applicable,
      backend != Nx.BinaryBackend,
      Version.match?(nx_version, versions),
      do: {name, category}

for {_name, category} <- listed, not Map.has_key?(reasons, category) do
  raise "not_applicable.exs: no reason for category #{inspect(category)}"
end

counts = listed |> Enum.frequencies_by(&elem(&1, 1)) |> Enum.sort()

IO.puts(
  "nx_suite: Nx #{nx_version} on #{inspect(backend)}; excluded (not_applicable.exs): " <>
    Enum.map_join(counts, ", ", fn {category, n} -> "#{category} #{n}" end)
)

# (ExUnit excludes by name alone: modules whose tests share a name with an
# excluded test elsewhere are included again, see not_applicable.exs)
ExUnit.configure(
  exclude:
    Keyword.get(ExUnit.configuration(), :exclude, []) ++
      for({name, _} <- listed, do: {:test, name}),
  include:
    Keyword.get(ExUnit.configuration(), :include, []) ++
      if(listed == [], do: [], else: for(m <- rerun_modules, do: {:module, inspect(m)}))
)
