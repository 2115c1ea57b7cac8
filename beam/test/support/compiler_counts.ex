defmodule Emily.Test.CompilerCounts do
  @moduledoc false
  # With EMILY_DEFN_COMPILER=1 (test_helper.exs): how many defns the suite
  # compiled to engine graphs and which fell back to the evaluator, why.

  # the table outlives test_helper.exs's process (an ETS table dies with
  # its owner, and telemetry detaches a handler that raises)
  def start do
    parent = self()

    spawn(fn ->
      :ets.new(:emily_compiler_counts, [:named_table, :public, :duplicate_bag])
      send(parent, :ready)
      Process.sleep(:infinity)
    end)

    receive do
      :ready -> :ok
    end
  end

  def handle([:emily, :compiler, :compile], _measurements, _meta, _),
    do: :ets.insert(:emily_compiler_counts, {:graph, nil})

  def handle([:emily, :compiler, :fallback], _measurements, %{reason: reason}, _),
    do: :ets.insert(:emily_compiler_counts, {:fallback, reason})

  def print do
    rows = :ets.tab2list(:emily_compiler_counts)
    graphs = Enum.count(rows, &match?({:graph, _}, &1))
    fallbacks = for {:fallback, reason} <- rows, do: reason

    IO.puts(
      "\nEmily.Compiler: #{graphs} graphs compiled, #{length(fallbacks)} fallbacks to the evaluator"
    )

    fallbacks
    |> Enum.frequencies()
    |> Enum.sort_by(fn {_, n} -> -n end)
    |> Enum.each(fn {reason, n} -> IO.puts("  #{n} x #{String.slice(reason, 0, 160)}") end)
  end
end
