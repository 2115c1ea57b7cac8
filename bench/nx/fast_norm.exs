# Emily.Fast's layer_norm and rms_norm through Nx against the composed
# forms models use (Axon's layer_norm, Bumblebee's rms_norm, written out
# here), on Emily.Backend eagerly and compiled by Emily.Compiler (whose
# graphs fuse element-wise chains on the CPU). f32, median of 30 runs each
# after a warm-up, in microseconds.
#
#   cd beam && EMILY_NX_PATH=/path/to/nx/nx MIX_ENV=prod mix run ../bench/nx/fast_norm.exs
Nx.default_backend(Emily.Backend)

defmodule Bench.FastNorm do
  def axon_layer_norm(x, gamma, beta) do
    mean = Nx.mean(x, axes: [-1], keep_axes: true)
    var = Nx.variance(x, axes: [-1], keep_axes: true)
    r = Nx.select(Nx.greater_equal(var, 1.0e-5), Nx.rsqrt(Nx.add(var, 1.0e-5)), Nx.rsqrt(1.0e-5))
    Nx.add(Nx.multiply(Nx.multiply(gamma, r), Nx.subtract(x, mean)), beta)
  end

  def bumblebee_rms_norm(x, weight) do
    variance = x |> Nx.as_type(:f32) |> Nx.pow(2) |> Nx.mean(axes: [-1], keep_axes: true)
    normalized = x |> Nx.multiply(Nx.rsqrt(Nx.add(variance, 1.0e-6))) |> Nx.as_type(Nx.type(x))
    Nx.multiply(normalized, Nx.add(0.0, weight))
  end

  def median_us(fun) do
    for _ <- 1..3, do: fun.()

    times =
      for _ <- 1..30 do
        {us, _} = :timer.tc(fun)
        us
      end

    Enum.at(Enum.sort(times), 15)
  end
end

key = Nx.Random.key(1)

for {rows, n} <- [{32 * 128, 384}, {32, 576}, {128, 576}] do
  {x, key} = Nx.Random.uniform(key, -4.0, 4.0, shape: {rows, n}, type: :f32)
  {g, key} = Nx.Random.uniform(key, -2.0, 2.0, shape: {n}, type: :f32)
  {b, _} = Nx.Random.uniform(key, -1.0, 1.0, shape: {n}, type: :f32)
  jit = &Nx.Defn.jit(&1, compiler: Emily.Compiler)
  fast_ln = jit.(&Emily.Fast.layer_norm(&1, &2, &3))
  axon_ln = jit.(&Bench.FastNorm.axon_layer_norm/3)
  fast_rms = jit.(&Emily.Fast.rms_norm/2)
  bumblebee_rms = jit.(&Bench.FastNorm.bumblebee_rms_norm/2)

  cases = [
    {"layer_norm", "Emily.Fast, eager", fn -> Emily.Fast.layer_norm(x, g, b) end},
    {"layer_norm", "Axon's, eager", fn -> Bench.FastNorm.axon_layer_norm(x, g, b) end},
    {"layer_norm", "Emily.Fast, Emily.Compiler", fn -> fast_ln.(x, g, b) end},
    {"layer_norm", "Axon's, Emily.Compiler", fn -> axon_ln.(x, g, b) end},
    {"rms_norm", "Emily.Fast, eager", fn -> Emily.Fast.rms_norm(x, g) end},
    {"rms_norm", "Bumblebee's, eager", fn -> Bench.FastNorm.bumblebee_rms_norm(x, g) end},
    {"rms_norm", "Emily.Fast, Emily.Compiler", fn -> fast_rms.(x, g) end},
    {"rms_norm", "Bumblebee's, Emily.Compiler", fn -> bumblebee_rms.(x, g) end}
  ]

  for {op, how, fun} <- cases do
    IO.puts("| {#{rows}, #{n}} | #{op} | #{how} | #{Bench.FastNorm.median_us(fun)} |")
  end
end
