# bench/models/common.exs: helpers shared by the model benchmarks
# (Code.require_file'd by minilm.exs and smollm2.exs).
defmodule EmilyModels.Bench do
  @moduledoc false

  def out_dir do
    dir = System.get_env("EMILY_MODELS_OUT") || Path.join(File.cwd!(), "results")
    File.mkdir_p!(dir)
    dir
  end

  def data_dir, do: System.get_env("EMILY_MODELS_DATA", "/work/deps/models_data")

  # Both benchmarks run on Emily's CPU backend, in this process and in
  # the processes it starts.
  def use_emily_cpu do
    Nx.global_default_backend({Emily.Backend, device: :cpu})
    Nx.default_backend({Emily.Backend, device: :cpu})
  end

  # A comma-separated list from the environment (its default when unset).
  def env_list(name, default), do: System.get_env(name, default) |> String.split(",", trim: true)

  def env_int(name, default) do
    case System.get_env(name) do
      nil -> default
      "" -> default
      v -> String.to_integer(v)
    end
  end

  # The pseudo-random sequence minilm_torch.py also computes: a 31-bit LCG
  # (glibc's constants) from `seed`; ids in [lo, hi).
  def lcg_ids(seed, count, lo, hi) do
    {ids, _} =
      Enum.map_reduce(1..count, seed, fn _, x ->
        x = rem(1_103_515_245 * x + 12_345, 2_147_483_648)
        {lo + rem(x, hi - lo), x}
      end)

    ids
  end

  def wall_ms(fun) do
    t0 = System.monotonic_time(:nanosecond)
    result = fun.()
    {(System.monotonic_time(:nanosecond) - t0) / 1.0e6, result}
  end

  def median(xs) do
    s = Enum.sort(xs)
    n = length(s)
    if rem(n, 2) == 1, do: Enum.at(s, div(n, 2)), else: (Enum.at(s, div(n, 2) - 1) + Enum.at(s, div(n, 2))) / 2
  end

  # Waits for the result: copies it to the host (the engine's only wait).
  def materialize(result) do
    Nx.Defn.Composite.traverse(result, fn t -> Nx.backend_copy(t, Nx.BinaryBackend) end)
  end

  # Every result line is also appended to results.jsonl (read by `run`).
  def record(map) do
    line = Jason.encode!(map)
    File.write!(Path.join(out_dir(), "results.jsonl"), line <> "\n", [:append])
    IO.puts("  " <> line)
  end

  # A lane that raised: the message and where, recorded instead of times.
  def record_error(model, shape, lane, e, stacktrace) do
    record(%{
      model: model,
      shape: shape,
      lane: lane,
      how: "error",
      detail: Exception.message(e) |> String.slice(0, 500),
      where: stacktrace |> Enum.take(4) |> Enum.map(&Exception.format_stacktrace_entry/1)
    })
  end

  # Which way Emily.Compiler ran the last compiled function of this process.
  def compiler_status do
    case Emily.Compiler.last_run() do
      {:graph, stats} -> {"graph", stats |> Map.new() |> Map.take([:calls, :folded, :dropped, :fused_calls, :peak_bytes, :replays, :replay_bytes])}
      {:fallback, reason} -> {"fallback", reason}
      nil -> {"none", nil}
    end
  end

  def write_f32(path, tensor) do
    File.write!(path, tensor |> Nx.as_type(:f32) |> Nx.to_binary())
  end
end
