defmodule Emily.Test.CorpusCase do
  @moduledoc """
  Generates one test per callback of a corpus file: it runs every case of
  that callback through Emily.Native and fails with the first differences.
  Callbacks the engine's dispatcher does not implement yet are tagged
  skipped (and listed in the summary), never counted as passed.

      use Emily.Test.CorpusCase, file: "sweep.jsonl"
  """

  defmacro __using__(opts) do
    file = Keyword.fetch!(opts, :file)

    quote bind_quoted: [file: file] do
      use ExUnit.Case, async: true
      alias Emily.Test.Corpus

      @file_name file
      @implemented Enum.map(Emily.Native.callbacks(), &Atom.to_string/1)

      case Corpus.ops(file) do
        nil ->
          # The corpus ships in the repository: a missing file is a failure.
          test "#{file}: corpus present" do
            flunk("corpus #{@file_name} (or #{@file_name}.gz) not found in #{Corpus.dir()}")
          end

        ops ->
          setup_all do
            {:ok, cases: Map.new(Corpus.lines_by_op(@file_name))}
          end

          for {op, count} <- ops do
            if op in @implemented do
              test "#{file} #{op} (#{count} cases)", %{cases: cases} do
                Emily.Test.CorpusCase.run_op(
                  @file_name,
                  unquote(op),
                  Map.fetch!(cases, unquote(op))
                )
              end
            else
              :ets.insert(:emily_corpus_stats, {{file, op}, 0, 0, count})

              @tag skip: "#{op}: callback not implemented by the engine (#{count} cases)"
              test "#{file} #{op} (#{count} cases)" do
              end
            end
          end
      end
    end
  end

  import ExUnit.Assertions

  @doc false
  def run_op(file, op, cases) do
    failures =
      Enum.flat_map(cases, fn {index, line} ->
        case Emily.Test.Corpus.run_case(line) do
          :ok -> []
          {:error, msg} -> ["FAIL #{op} ##{index}: #{msg}"]
        end
      end)

    n = length(cases)
    :ets.insert(:emily_corpus_stats, {{file, op}, n - length(failures), length(failures), 0})

    assert failures == [],
           "#{length(failures)} of #{n} cases failed:\n" <>
             Enum.join(Enum.take(failures, 3), "\n")
  end

  @doc "Prints the per-callback table of a corpus file (like the C runner's)."
  def print_summary do
    rows = :ets.tab2list(:emily_corpus_stats)

    # files whose cases ran (not when only other tests were selected)
    ran = for {{f, _}, p, f2, _} <- rows, p + f2 > 0, uniq: true, do: f

    for file <- Enum.sort(ran) do
      mine = rows |> Enum.filter(fn {{f, _}, _, _, _} -> f == file end) |> Enum.sort()
      IO.puts("\nconformance through Emily.Native: #{file}")
      IO.puts(String.pad_trailing("op", 24) <> "   passed   failed  skipped")

      for {{_, op}, p, f, s} <- mine do
        IO.puts(
          String.pad_trailing(op, 24) <>
            Enum.map_join([p, f, s], "", &String.pad_leading(Integer.to_string(&1), 9))
        )
      end

      checked = for {{_, op}, _, _, _} <- mine, Emily.Test.Corpus.property_checked?(op), do: op

      if checked != [] do
        IO.puts(
          "the reference's bits, or else these defining properties (tests/conformance/properties.c):"
        )

        for op <- checked,
            do: IO.puts("  #{op}: #{Emily.Native.test_property_description(String.to_atom(op))}")
      end

      skipped = for {{_, op}, _, _, s} <- mine, s > 0, do: op

      if skipped != [] do
        IO.puts("skipped (callback not implemented by the engine): " <> Enum.join(skipped, " "))
      end

      {p, f, s} =
        Enum.reduce(mine, {0, 0, 0}, fn {_, p, f, s}, {a, b, c} -> {a + p, b + f, c + s} end)

      IO.puts("#{file}: #{p} passed, #{f} failed, #{s} skipped")
    end
  end
end
