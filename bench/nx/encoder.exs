# A BERT-style encoder (MiniLM-L6's dimensions: hidden 384, 12 heads,
# intermediate 1536, 6 layers) written as one defn, timed with
# Emily.Compiler and with Nx.Defn.Evaluator on Emily.Backend.
#
#   cd beam && EMILY_NX_PATH=... mix run ../bench/nx/encoder.exs [batch] [seq] [runs]
#
# EMILY_GRAPH_PROFILE=1 prints the compiled graph's time per callback.
defmodule Bench.Encoder do
  import Nx.Defn

  @heads 12

  defn layer_norm(x, g, b) do
    mean = Nx.mean(x, axes: [-1], keep_axes: true)
    var = Nx.variance(x, axes: [-1], keep_axes: true)
    (x - mean) * Nx.rsqrt(var + 1.0e-12) * g + b
  end

  defn gelu(x), do: 0.5 * x * (1 + Nx.erf(x / Nx.sqrt(2.0)))

  defn attention(x, p) do
    {b, s, h} = Nx.shape(x)
    d = div(h, @heads)
    q = (Nx.dot(x, p.wq) + p.bq) |> Nx.reshape({b, s, @heads, d}) |> Nx.transpose(axes: [0, 2, 1, 3])
    k = (Nx.dot(x, p.wk) + p.bk) |> Nx.reshape({b, s, @heads, d}) |> Nx.transpose(axes: [0, 2, 1, 3])
    v = (Nx.dot(x, p.wv) + p.bv) |> Nx.reshape({b, s, @heads, d}) |> Nx.transpose(axes: [0, 2, 1, 3])
    scores = Nx.dot(q, [3], [0, 1], k, [3], [0, 1]) / Nx.sqrt(d)
    m = Nx.reduce_max(scores, axes: [-1], keep_axes: true)
    e = Nx.exp(scores - m)
    w = e / Nx.sum(e, axes: [-1], keep_axes: true)
    ctx = Nx.dot(w, [3], [0, 1], v, [2], [0, 1]) |> Nx.transpose(axes: [0, 2, 1, 3]) |> Nx.reshape({b, s, h})
    Nx.dot(ctx, p.wo) + p.bo
  end

  defn layer(x, p) do
    x = layer_norm(x + attention(x, p), p.g1, p.b1)
    ff = gelu(Nx.dot(x, p.w1) + p.c1) |> Nx.dot(p.w2) |> Nx.add(p.c2)
    layer_norm(x + ff, p.g2, p.b2)
  end

  defn encoder(x, layers) do
    {l0, l1, l2, l3, l4, l5} = layers
    x |> layer(l0) |> layer(l1) |> layer(l2) |> layer(l3) |> layer(l4) |> layer(l5) |> Nx.mean(axes: [1])
  end

  def params(key) do
    h = 384
    f = 1536

    {layers, _} =
      Enum.map_reduce(1..6, key, fn _, key ->
        shapes = [wq: {h, h}, wk: {h, h}, wv: {h, h}, wo: {h, h}, w1: {h, f}, w2: {f, h}]
        {ws, key} = Enum.map_reduce(shapes, key, fn {n, s}, key ->
          {w, key} = Nx.Random.normal(key, 0.0, 0.05, shape: s)
          {{n, w}, key}
        end)
        vec = fn n -> Nx.broadcast(0.01, {n}) end
        p = Map.new(ws) |> Map.merge(%{bq: vec.(h), bk: vec.(h), bv: vec.(h), bo: vec.(h), c1: vec.(f), c2: vec.(h),
          g1: Nx.broadcast(1.0, {h}), b1: vec.(h), g2: Nx.broadcast(1.0, {h}), b2: vec.(h)})
        {p, key}
      end)

    List.to_tuple(layers)
  end
end

[batch, seq, runs] =
  case System.argv() do
    [b, s, r] -> Enum.map([b, s, r], &String.to_integer/1)
    [b, s] -> [String.to_integer(b), String.to_integer(s), 5]
    _ -> [8, 128, 5]
  end

Nx.default_backend(Emily.Backend)
key = Nx.Random.key(42)
layers = Bench.Encoder.params(key)
{x, _} = Nx.Random.normal(Nx.Random.key(1), shape: {batch, 128 |> min(seq), 384})

time = fn f ->
  f.()
  ts = for _ <- 1..runs, do: elem(:timer.tc(f), 0) / 1000
  Enum.at(Enum.sort(ts), div(runs, 2))
end

compiled = Nx.Defn.jit(&Bench.Encoder.encoder/2, compiler: Emily.Compiler)
evaluated = Nx.Defn.jit(&Bench.Encoder.encoder/2, compiler: Nx.Defn.Evaluator)
tc = time.(fn -> compiled.(x, layers) |> Nx.backend_copy(Nx.BinaryBackend) end)
IO.inspect(Emily.Compiler.last_run(), label: "graph")
te = time.(fn -> evaluated.(x, layers) |> Nx.backend_copy(Nx.BinaryBackend) end)
same = Nx.to_binary(compiled.(x, layers)) == Nx.to_binary(evaluated.(x, layers))

IO.puts("encoder #{batch}x#{seq}: Emily.Compiler #{Float.round(tc, 2)} ms, evaluator on Emily.Backend " <>
  "#{Float.round(te, 2)} ms (#{Float.round(te / tc, 2)}x); identical results: #{same}")
