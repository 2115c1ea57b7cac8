# Sentence embeddings behind an Nx.Serving: all-MiniLM-L6-v2 through
# Bumblebee, compiled by Emily.Compiler, with requests from many processes
# batched together.
#
# Run it inside a Mix project that has Bumblebee and Emily as dependencies
# (bench/models/setup makes one at /work/deps/models_app):
#
#     cd /work/deps/models_app && mix run /work/main/beam/examples/embeddings_serving.exs
#
# Options (environment): MODEL_DIR (default: the checkout's
# models/all-MiniLM-L6-v2, which scripts/install_minilm fills), DEVICE (cpu,
# cuda), BATCH_SIZE (8), SEQUENCE_LENGTH (256), REQUESTS (64).
#
# With Bumblebee's tokenizer available, the whole serving is one call:
#
#     serving =
#       Bumblebee.Text.text_embedding(model_info, tokenizer,
#         output_pool: :mean_pooling,
#         output_attribute: :hidden_state,
#         embedding_processor: :l2_norm,
#         compile: [batch_size: 8, sequence_length: 256],
#         defn_options: [compiler: Emily.Compiler]
#       )
#
#     Nx.Serving.batched_run(MyServing, "A man is eating food.")
#
# This script builds the same serving by hand on token ids (read from the
# repository's reference file, tokenized by Hugging Face), because the
# tokenizers NIF cannot be built where it was written; the embedding
# function is Bumblebee's text-embedding one for this model (mean pooling
# over the attention mask, then unit length, as sentence-transformers).
repo = Path.expand("../..", __DIR__)
model_dir = System.get_env("MODEL_DIR", Path.join(repo, "models/all-MiniLM-L6-v2"))
reference = Path.join(repo, "tests/models/minilm_reference.json")
device = System.get_env("DEVICE", "cpu")
batch_size = String.to_integer(System.get_env("BATCH_SIZE", "8"))
seq = String.to_integer(System.get_env("SEQUENCE_LENGTH", "256"))
requests = String.to_integer(System.get_env("REQUESTS", "64"))

{:ok, _} = Application.ensure_all_started(:emily)
Application.load(:bumblebee)
backend = {Emily.Backend, device: device}
Nx.global_default_backend(backend)

{:ok, %{model: model, params: params}} =
  Bumblebee.load_model({:local, model_dir}, architecture: :base, backend: backend)

{_init, encoder} = Axon.build(model)

embed = fn params, inputs ->
  hidden = encoder.(params, inputs).hidden_state
  mask = Nx.new_axis(inputs["attention_mask"], -1)

  hidden
  |> Nx.multiply(mask)
  |> Nx.sum(axes: [1])
  |> Nx.divide(Nx.sum(mask, axes: [1]))
  |> Bumblebee.Utils.Nx.normalize()
end

# One request: a list of token-id lists, each padded (with 0, masked out)
# or cut to the serving's sequence length, so that requests of any length
# stack into one batch.
pad = fn ids ->
  ids = Enum.take(ids, seq)
  n = length(ids)
  {ids ++ List.duplicate(0, seq - n), List.duplicate(1, n) ++ List.duplicate(0, seq - n)}
end

serving =
  Nx.Serving.new(
    # the parameters are an argument of the compiled function, not captured
    # in it (a graph's constants would be copied into every compilation)
    fn defn_options ->
      jitted = Nx.Defn.jit(embed, defn_options)
      fn batch -> jitted.(params, batch) end
    end,
    compiler: Emily.Compiler
  )
  |> Nx.Serving.batch_size(batch_size)
  |> Nx.Serving.client_preprocessing(fn texts_ids ->
    {ids, masks} = texts_ids |> Enum.map(pad) |> Enum.unzip()

    batch =
      Nx.Batch.concatenate([
        %{
          "input_ids" => Nx.tensor(ids, type: :u32),
          "attention_mask" => Nx.tensor(masks, type: :u32)
        }
      ])

    {batch, length(texts_ids)}
  end)
  |> Nx.Serving.client_postprocessing(fn {embeddings, _meta}, _n -> embeddings end)

{:ok, _} =
  Supervisor.start_link(
    [{Nx.Serving, serving: serving, name: MiniLMServing, batch_timeout: 20}],
    strategy: :one_for_one
  )

ref = Jason.decode!(File.read!(reference))
sentences = ref["sentences"]
texts = sentences ++ ref["tokenizer_cases"]

IO.puts(
  "all-MiniLM-L6-v2 on #{device}: Nx.Serving, batch size #{batch_size}, " <>
    "sequence length #{seq}, #{requests} requests of one text each"
)

# warm-up: the first call compiles the graph for the batch shape
Nx.Serving.batched_run(MiniLMServing, [hd(sentences)["ids"]])

{us, results} =
  :timer.tc(fn ->
    1..requests
    |> Task.async_stream(
      fn i ->
        {i, Nx.Serving.batched_run(MiniLMServing, [Enum.at(texts, rem(i, length(texts)))["ids"]])}
      end,
      max_concurrency: requests,
      timeout: :infinity
    )
    |> Enum.map(fn {:ok, r} -> r end)
  end)

IO.puts(
  "#{requests} requests in #{Float.round(us / 1000, 1)} ms: " <>
    "#{Float.round(requests / (us / 1.0e6), 1)} embeddings/s"
)

# every sentence with a PyTorch embedding in the reference: the served one
# against it
worst =
  for {i, emb} <- results, s = Enum.at(texts, rem(i, length(texts))), s["embedding"] do
    Nx.subtract(emb[0], Nx.tensor(s["embedding"], type: :f32))
    |> Nx.abs()
    |> Nx.reduce_max()
    |> Nx.to_number()
  end
  |> Enum.max()

IO.puts("largest difference from PyTorch's embeddings (sentence-transformers' pipeline): #{worst}")
