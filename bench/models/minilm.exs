# bench/models/minilm.exs: all-MiniLM-L6-v2 sentence embeddings through
# Bumblebee on Emily, two lanes:
#
#   compiler  Nx.Defn.jit(fun, compiler: Emily.Compiler)  (one engine graph)
#   eager     Nx.Defn.jit(fun, compiler: Nx.Defn.Evaluator) on Emily.Backend
#
# `fun` is Bumblebee's text-embedding function (Bumblebee.Text.text_embedding
# with output_attribute: :hidden_state, output_pool: :mean_pooling,
# embedding_processor: :l2_norm: what sentence-transformers' modules.json
# for this model says, Transformer -> mean Pooling -> Normalize), on fixed
# token ids (no tokenizer). Run inside the app that bench/models/setup makes:
#
#   cd /work/deps/models_app && mix run /work/main/bench/models/minilm.exs
#
# Env: MINILM_SHAPES ("8x128,32x128"), MINILM_RUNS (10), MINILM_LANES
# ("compiler,eager"), MINILM_DEVICE (Emily's device: cpu, cuda, cuda:N;
# default cpu), EMILY_MODELS_OUT (results dir), EMILY_MODELS_DATA.
# Writes OUT/minilm_ids_BxS.bin (u32) and OUT/minilm_<lane>_BxS.bin (f32
# embeddings) for minilm_torch.py, and one JSON line per lane to
# OUT/results.jsonl.
Code.require_file("common.exs", __DIR__)
alias EmilyModels.Bench

# Outside Mix (bench/gpu/run.sh runs this file with `elixir -pa ...`) no
# application is started: Emily's and Nx's are, and Bumblebee's is only
# loaded (starting it would start its HTTP client, :inets, which the
# packed runtime lacks; the model loads from a local folder)
{:ok, _} = Application.ensure_all_started(:emily)
Application.load(:bumblebee)

device = System.get_env("MINILM_DEVICE", "cpu")
backend = {Emily.Backend, device: device}
Nx.global_default_backend(backend)
Nx.default_backend(backend)

dir = Path.join(Bench.data_dir(), "all-MiniLM-L6-v2")
runs = Bench.env_int("MINILM_RUNS", 10)

shapes =
  Bench.env_list("MINILM_SHAPES", "8x128,32x128")
  |> Enum.map(fn s -> s |> String.split("x") |> Enum.map(&String.to_integer/1) |> List.to_tuple() end)

lanes = Bench.env_list("MINILM_LANES", "compiler,eager")
# MINILM_TYPE=bf16: parameters and computation in bf16 (Bumblebee's :type);
# the shapes' tags get "-bf16" (minilm_torch.py reads the same variable)
type = System.get_env("MINILM_TYPE", "f32")
type_opts = if type == "f32", do: [], else: [type: String.to_atom(type)]
type_tag = if type == "f32", do: "", else: "-#{type}"

{load_ms, {:ok, %{model: model, params: params, spec: spec}}} =
  Bench.wall_ms(fn ->
    Bumblebee.load_model({:local, dir}, [architecture: :base, backend: backend] ++ type_opts)
  end)

IO.puts("MiniLM: #{inspect(spec.__struct__)} on #{device}, loaded in #{round(load_ms)} ms from #{dir}")

{_init, encoder} = Axon.build(model)

# Bumblebee.Text.TextEmbedding's embedding function, with this model's options
embedding_fun = fn params, inputs ->
  output = encoder.(params, inputs).hidden_state
  mask = Nx.new_axis(inputs["attention_mask"], -1)

  output
  |> Nx.multiply(mask)
  |> Nx.sum(axes: [1])
  |> Nx.divide(Nx.sum(mask, axes: [1]))
  |> Bumblebee.Utils.Nx.normalize()
end

lane_opts = %{
  "compiler" => [compiler: Emily.Compiler],
  "eager" => [compiler: Nx.Defn.Evaluator]
}

out = Bench.out_dir()

for {batch, seq} <- shapes do
  tag = "#{batch}x#{seq}#{type_tag}"
  # [CLS] ids... [SEP]: ids from the LCG in [1000, vocab), as minilm_torch.py
  body = Bench.lcg_ids(42 + batch * 1000 + seq, batch * (seq - 2), 1000, spec.vocab_size)

  ids =
    body
    |> Enum.chunk_every(seq - 2)
    |> Enum.map(fn row -> [101 | row] ++ [102] end)

  input_ids = Nx.tensor(ids, type: :u32)
  File.write!(Path.join(out, "minilm_ids_#{tag}.bin"), Nx.to_binary(input_ids))

  inputs = %{
    "input_ids" => input_ids,
    "attention_mask" => Nx.broadcast(Nx.tensor(1, type: :u32), {batch, seq})
  }

  for lane <- lanes do
    fun = Nx.Defn.jit(embedding_fun, lane_opts[lane])

    try do
      {first_ms, _} = Bench.wall_ms(fn -> Bench.materialize(fun.(params, inputs)) end)

      times =
        for _ <- 1..runs do
          {ms, _} = Bench.wall_ms(fn -> Bench.materialize(fun.(params, inputs)) end)
          ms
        end

      # (after the timed runs: their graph statistics, replays included)
      status = if lane == "compiler", do: Bench.compiler_status(), else: {"eager", nil}

      emb = Bench.materialize(fun.(params, inputs))
      Bench.write_f32(Path.join(out, "minilm_#{lane}_#{tag}.bin"), emb)

      Bench.record(%{
        model: "all-MiniLM-L6-v2",
        shape: tag,
        lane: lane,
        device: device,
        median_ms: Float.round(Bench.median(times), 2),
        min_ms: Float.round(Enum.min(times), 2),
        first_ms: Float.round(first_ms, 1),
        runs: runs,
        how: elem(status, 0),
        detail: elem(status, 1)
      })
    rescue
      e -> Bench.record_error("all-MiniLM-L6-v2", tag, lane, e, __STACKTRACE__)
    end
  end
end
