# Per-op overhead of an eager tiny op through Nx: Nx.add of two 1-element
# f32 tensors in a loop, on Emily.Backend (CPU) against Nx.BinaryBackend,
# plus the layers underneath (the NIF alone, dirty vs inline scheduling,
# a telemetry span). Run from beam/ with Nx available:
#
#   EMILY_NX_PATH=/path/to/nx/nx mix run ../bench/nx/overhead.exs
#
# Prints microseconds per op (median of 7 runs of N iterations each).
defmodule Emily.Bench.Overhead do
  @iterations 100_000
  @runs 7

  def time_us(fun) do
    # warm up, then the median of several runs
    for _ <- 1..1000, do: fun.()

    for _ <- 1..@runs do
      {us, _} = :timer.tc(fn -> loop(fun, @iterations) end)
      us / @iterations
    end
    |> Enum.sort()
    |> Enum.at(div(@runs, 2))
  end

  defp loop(_fun, 0), do: :ok

  defp loop(fun, n) do
    fun.()
    loop(fun, n - 1)
  end

  def row(name, us), do: IO.puts(String.pad_trailing(name, 54) <> to_string(:io_lib.format("~8.3f", [us])))

  def run do
    IO.puts("Nx #{Application.spec(:nx, :vsn)}, Elixir #{System.version()}, OTP #{:erlang.system_info(:otp_release)}, " <>
              "#{System.schedulers_online()} schedulers, #{@iterations} iterations x #{@runs} runs (median)")
    IO.puts(String.pad_trailing("case", 54) <> "   us/op")

    bb_a = Nx.tensor([1.0], type: :f32, backend: Nx.BinaryBackend)
    bb_b = Nx.tensor([2.0], type: :f32, backend: Nx.BinaryBackend)
    em_a = Nx.tensor([1.0], type: :f32, backend: Emily.Backend)
    em_b = Nx.tensor([2.0], type: :f32, backend: Emily.Backend)

    binary = time_us(fn -> Nx.add(bb_a, bb_b) end)
    row("Nx.add, Nx.BinaryBackend", binary)

    emily = time_us(fn -> Nx.add(em_a, em_b) end)
    row("Nx.add, Emily.Backend (inline NIF)", emily)

    old = Emily.Native.set_inline_limit(0)
    dirty = time_us(fn -> Nx.add(em_a, em_b) end)
    Emily.Native.set_inline_limit(old)
    row("Nx.add, Emily.Backend (every op on a dirty scheduler)", dirty)

    out = %{type: {:f, 32}, shape: {1}}
    ra = em_a.data.ref
    rb = em_b.data.ref
    nif = time_us(fn -> Emily.Native.dispatch(:add, out, [ra, rb], nil, nil, 0) end)
    row("Emily.Native.dispatch(:add) alone, inline", nif)

    structs = time_us(fn -> Emily.Native.dispatch(:add, out, [em_a, em_b], nil, nil, 0) end)
    row("Emily.Native.dispatch(:add) with %Nx.Tensor{} args", structs)

    # what Emily.Backend asks for: each result as %Emily.Backend{ref, bytes}
    data = time_us(fn -> Emily.Native.dispatch(:add, out, [em_a, em_b], nil, nil, 2) end)
    row("  ... results as %Emily.Backend{} (mode 2)", data)

    Emily.Native.set_inline_limit(0)
    nif_dirty = time_us(fn -> Emily.Native.dispatch(:add, out, [ra, rb], nil, nil, 0) end)
    Emily.Native.set_inline_limit(old)
    row("Emily.Native.dispatch(:add) alone, dirty scheduler", nif_dirty)

    span = time_us(fn -> :telemetry.span([:emily, :bench], %{}, fn -> {:ok, %{}} end) end)
    row(":telemetry.span with no handler", span)

    IO.puts("target: <= 10 us per op through Nx (Emily.Backend, inline): " <>
              if(emily <= 10, do: "met", else: "NOT met"))
  end
end

Emily.Bench.Overhead.run()
