if Code.ensure_loaded?(Nx) do
  defmodule Emily.Fast do
    @moduledoc """
    Fused transformer kernels, callable from `defn` and on any backend.

        y = Emily.Fast.layer_norm(x, gamma, beta, epsilon: 1.0e-5)
        y = Emily.Fast.rms_norm(x, gamma, epsilon: 1.0e-6)

    Each function is one `Nx.block/4` (Nx 0.12 and later) with a struct of
    this module and a composed fallback written with ordinary Nx
    operations. `Emily.Backend` (eager) and `Emily.Compiler` (in a graph)
    run the block as one engine kernel on the CPU or the GPU; every other
    backend or compiler runs the fallback, and gradients are the
    fallback's (Nx differentiates a block through its fallback). On Nx
    0.7, which has no `Nx.block/4`, the fallback runs everywhere.

    Both normalize the last axis of `x`; `gamma` and `beta` have shape
    `{n}`, `n` the size of that axis. The inputs are floats (f16, bf16,
    f32, f64, types may differ); the result has the shape and names of
    `x` and the merge of the inputs' types. The fallback, and the engine's
    kernels, compute exactly this (W: f64 for an f64 `x`, else f32; A: f64
    for an f64 result, else f32; `round_T` rounds to type T):

      * `layer_norm` (Axon's `Axon.Layers.layer_norm` with `channel_index:
        -1`, in W and A):

            mean = mean(x)                 # sums in f64 (BinaryBackend) or double lanes (engine)
            c    = x - mean
            var  = mean(c * c)             # biased
            r    = if var >= eps, do: rsqrt(var + eps), else: rsqrt(eps)
            y    = round_out((gamma * r) * c + beta)

        f16/bf16 inputs are upcast to f32 and the result rounded once
        (Axon itself computes in the input type, rounding every step).

      * `rms_norm` (Bumblebee's `Bumblebee.Layers.rms_norm` with its
        defaults, `upcast: :normalization`, `shift: 0.0`):

            r = rsqrt(mean(x * x) + eps)
            z = round_x(x * r)             # back to x's type, as Bumblebee does
            y = round_out(z * gamma)

        (Bumblebee casts an f64 `x` to f32 for the normalization; here an
        f64 `x` is normalized in f64.)

    Options: `:epsilon` (default `1.0e-5` for `layer_norm`, Axon's;
    `1.0e-6` for `rms_norm`, Bumblebee's). `beta` may be `nil` (no bias).
    Vectorized `x` is normalized per entry; `gamma` and `beta` must not be
    vectorized.

    `scaled_dot_product_attention/4` is `softmax(q k^T * scale + mask) v`
    per batch and head, with `q` `{B, Hq, Sq, D}`, `k` `{B, Hkv, Skv, D}`,
    `v` `{B, Hkv, Skv, Dv}` (heads before positions, as PyTorch and MLX
    lay them out; Bumblebee's `{B, S, H, D}` needs a transpose), grouped
    query heads (`Hq` a multiple of `Hkv`), a bottom-right aligned causal
    mask, a boolean (`u8`) or additive mask and per-head sinks. Scores and
    softmax are computed in f32 (f64 for f64) and the probabilities are
    rounded to `v`'s type before the product, as Bumblebee's attention
    computes them with an upcast softmax. See docs/fast.md for the exact
    expression.

    `rope/3` rotates the features of `x` `{B, S, H, D}` by angles of each
    token's position (Bumblebee's and Hugging Face's rotary embedding,
    interleaved pairs with `traditional: true`, linear, dynamic and llama3
    scaling, explicit tables); see its documentation and docs/fast.md.
    """

    import Emily.FloatTypes, only: [float?: 1]

    defmodule LayerNorm do
      @moduledoc "The `Nx.block/4` struct of `Emily.Fast.layer_norm/4`."
      defstruct epsilon: 1.0e-5
    end

    defmodule RMSNorm do
      @moduledoc "The `Nx.block/4` struct of `Emily.Fast.rms_norm/3`."
      defstruct epsilon: 1.0e-6
    end

    defmodule Rope do
      @moduledoc """
      The `Nx.block/4` struct of `Emily.Fast.rope/3`: the options as the
      engine's rope callback reads them (`scaling` an atom, its parameters
      flat; `inv_frequency` says whether the explicit table follows `x` and
      `positions`).
      """
      defstruct dims: nil,
                base: 10_000.0,
                traditional: false,
                scaling: nil,
                factor: nil,
                low_frequency_factor: nil,
                high_frequency_factor: nil,
                original_max_positions: nil,
                sequence_length: nil,
                inv_frequency: false
    end

    defmodule SDPA do
      @moduledoc """
      The `Nx.block/4` struct of `Emily.Fast.scaled_dot_product_attention/4`:
      `mask` and `sinks` say whether those tensors follow `q`, `k`, `v`.
      """
      defstruct scale: 1.0, causal: false, mask: false, sinks: false
    end

    # Nx 0.12+ has Nx.block/4; Nx 0.7 runs the fallback directly
    @block? function_exported?(Nx, :block, 4)

    @doc """
    Layer normalization over the last axis: `(x - mean) / sqrt(var + eps) *
    gamma + beta` in Axon's form (see the module documentation for the
    exact expression and types). `beta` may be `nil`.
    """
    def layer_norm(x, gamma, beta, opts \\ []) do
      opts = Keyword.validate!(opts, epsilon: 1.0e-5)
      eps = epsilon!(:layer_norm, opts[:epsilon])
      inputs = if beta == nil, do: [x, gamma], else: [x, gamma, beta]
      run(:layer_norm, %LayerNorm{epsilon: eps}, inputs)
    end

    @doc """
    RMS normalization over the last axis: `x * rsqrt(mean(x * x) + eps) *
    gamma` in Bumblebee's form (see the module documentation for the
    exact expression and types).
    """
    def rms_norm(x, gamma, opts \\ []) do
      opts = Keyword.validate!(opts, epsilon: 1.0e-6)
      eps = epsilon!(:rms_norm, opts[:epsilon])
      run(:rms_norm, %RMSNorm{epsilon: eps}, [x, gamma])
    end

    @doc """
    Scaled dot-product attention: `softmax(q k^T * scale + mask) v`.

    `q` is `{B, Hq, Sq, D}`, `k` `{B, Hkv, Skv, D}`, `v` `{B, Hkv, Skv, Dv}`,
    all of one float type; `Hq` must be a multiple of `Hkv` (query head `h`
    reads kv head `div(h, div(Hq, Hkv))`). The result is `{B, Hq, Sq, Dv}`
    of `q`'s type.

    Options:

      * `:scale` - the scores' factor, default `1 / sqrt(D)`;
      * `:causal` - query `i` sees key `j` only when `j <= i + Skv - Sq`
        (aligned to the bottom-right corner: with a KV cache, the `Sq` new
        queries follow `Skv - Sq` cached keys), default `false`;
      * `:mask` - a tensor broadcastable to `{B, Hq, Sq, Skv}`: `u8` keeps
        the keys where it is nonzero, a float type is added to the scaled
        scores; default `nil`;
      * `:sinks` - `{Hq}` floats, one extra logit per head that joins the
        softmax's denominator and adds no value (gpt-oss), default `nil`.

    A row whose every key is masked gives zeros (not NaN). See
    docs/fast.md for the expression, step by step.
    """
    def scaled_dot_product_attention(q, k, v, opts \\ []) do
      opts = Keyword.validate!(opts, scale: nil, causal: false, mask: nil, sinks: nil)
      [q, k, v] = Enum.map([q, k, v], &Nx.to_tensor/1)
      mask = opts[:mask] && Nx.to_tensor(opts[:mask])
      sinks = opts[:sinks] && Nx.to_tensor(opts[:sinks])
      sdpa_check!(q, k, v, mask, sinks)

      unless is_boolean(opts[:causal]) do
        raise ArgumentError,
              "Emily.Fast.scaled_dot_product_attention: :causal must be a boolean, " <>
                "got: #{inspect(opts[:causal])}"
      end

      {b, hq, sq, d} = q.shape
      dv = elem(v.shape, 3)
      scale = sdpa_scale!(opts[:scale], d)

      struct = %SDPA{
        scale: scale,
        causal: opts[:causal],
        mask: mask != nil,
        sinks: sinks != nil
      }

      args = Enum.reject([q, k, v, mask, sinks], &is_nil/1)
      out = Nx.template({b, hq, sq, dv}, q.type)
      block(struct, args, out)
    end

    @doc """
    Rotary position embedding of `x` `{B, S, H, D}` (batch, sequence,
    heads, head size: the layout Bumblebee and Hugging Face rotate queries
    and keys in, before attention's transpose) at `positions`, an integer
    tensor `{S}` (shared by the batch) or `{B, S}` (decoding with a KV
    cache passes the cached length as offset). The result has `x`'s shape
    and type (f16, bf16, f32 or f64).

    Options:

      * `:dims` - how many leading features of each head are rotated (even,
        at most `D`), default `D`; the others pass through;
      * `:base` - the frequency table's base, default `10_000`;
      * `:traditional` - `true` rotates interleaved pairs `(2i, 2i + 1)`
        (GPT-J, llama.cpp, MLX's `traditional`), `false` (default) Hugging
        Face's and Bumblebee's `rotate_half` pairs `(i, i + dims / 2)`;
      * `:scaling` - `nil`, or Bumblebee's `scaling_strategy` maps:
        `%{type: :linear, factor: f}`, `%{type: :dynamic, factor: f,
        original_max_positions: n}` (Hugging Face's dynamic NTK) or
        `%{type: :llama3, factor: f, low_frequency_factor: l,
        high_frequency_factor: h, original_max_positions: n}`;
      * `:sequence_length` - for `:dynamic`, the length the base adapts to,
        default `S` (pass the total length when decoding);
      * `:inv_frequency` - an explicit table `{dims / 2}` of floats (used as
        f32): the angle of pair `i` is `position * inv_frequency[i]`, as in
        Hugging Face's `inv_freq` buffer (MLX's `freqs` are the
        reciprocals); it takes no `:scaling` and no `:base`.

    Computed as Bumblebee's `x * cos + rotate_half(x) * sin`: an f32 table
    `1 / base ** (2i / dims)`, f32 angles, cos and sin in double rounded to
    f32 and then to `x`'s type, products and sums rounded to `x`'s type.
    See docs/fast.md for the exact expression.
    """
    def rope(x, positions, opts \\ []) do
      opts =
        Keyword.validate!(opts,
          dims: nil,
          base: 10_000,
          traditional: false,
          scaling: nil,
          sequence_length: nil,
          inv_frequency: nil
        )

      [x, positions] = Enum.map([x, positions], &Nx.to_tensor/1)
      table = opts[:inv_frequency] && Nx.to_tensor(opts[:inv_frequency])
      struct = rope_struct!(x, positions, table, opts)
      args = Enum.reject([x, positions, table], &is_nil/1)
      block(struct, args, Nx.template(x.shape, x.type, names: x.names))
    end

    @rope "Emily.Fast.rope"

    defp rope_struct!(x, positions, table, opts) do
      for {arg, t} <- [x: x, positions: positions, inv_frequency: table],
          t != nil and t.vectorized_axes != [] do
        raise ArgumentError, "#{@rope}: #{arg} must not be vectorized"
      end

      unless float?(x.type) do
        raise ArgumentError,
              "#{@rope}: x must be a float tensor (f16, bf16, f32 or f64), " <>
                "got #{Nx.Type.to_string(x.type)}"
      end

      unless tuple_size(x.shape) == 4 do
        raise ArgumentError, "#{@rope}: x must have rank 4 (B, S, H, D), got #{inspect(x.shape)}"
      end

      {b, s, _h, d} = x.shape

      unless elem(positions.type, 0) in [:s, :u] do
        raise ArgumentError,
              "#{@rope}: positions must be an integer tensor, got " <>
                Nx.Type.to_string(positions.type)
      end

      unless positions.shape in [{s}, {b, s}] do
        raise ArgumentError,
              "#{@rope}: positions must have shape {#{s}} or {#{b}, #{s}} (S or B, S of x " <>
                "#{inspect(x.shape)}), got #{inspect(positions.shape)}"
      end

      dims = opts[:dims] || d

      unless is_integer(dims) and dims > 0 and dims <= d and rem(dims, 2) == 0 do
        raise ArgumentError,
              "#{@rope}: :dims must be an even integer from 2 to the head size D (#{d}), " <>
                "got #{inspect(opts[:dims] || d)}"
      end

      unless is_boolean(opts[:traditional]) do
        raise ArgumentError,
              "#{@rope}: :traditional must be a boolean, got #{inspect(opts[:traditional])}"
      end

      struct = %Rope{dims: dims, traditional: opts[:traditional]}

      if table do
        unless float?(table.type) and table.shape == {div(dims, 2)} do
          raise ArgumentError,
                "#{@rope}: :inv_frequency must be a float tensor of shape {#{div(dims, 2)}} " <>
                  "(dims / 2), got #{Nx.Type.to_string(table.type)} #{inspect(table.shape)}"
        end

        if opts[:scaling] != nil do
          raise ArgumentError,
                "#{@rope}: :inv_frequency takes no :scaling (the table holds any scaling)"
        end

        %{struct | base: nil, inv_frequency: true}
      else
        base = positive!(:base, opts[:base])
        rope_scaling!(%{struct | base: base}, opts[:scaling], opts[:sequence_length], dims)
      end
    end

    defp rope_scaling!(struct, nil, _length, _dims), do: struct

    defp rope_scaling!(struct, %{type: :linear} = m, _length, _dims) do
      %{struct | scaling: :linear, factor: positive!(:factor, m[:factor])}
    end

    defp rope_scaling!(struct, %{type: :dynamic} = m, length, dims) do
      if dims <= 2 do
        raise ArgumentError, "#{@rope}: :dynamic scaling needs :dims above 2, got #{dims}"
      end

      unless length == nil or (is_integer(length) and length >= 0) do
        raise ArgumentError,
              "#{@rope}: :sequence_length must be a non-negative integer, got #{inspect(length)}"
      end

      %{
        struct
        | scaling: :dynamic,
          factor: positive!(:factor, m[:factor]),
          original_max_positions: positive_integer!(m[:original_max_positions]),
          sequence_length: length
      }
    end

    defp rope_scaling!(struct, %{type: :llama3} = m, _length, _dims) do
      lo = positive!(:low_frequency_factor, m[:low_frequency_factor])
      hi = positive!(:high_frequency_factor, m[:high_frequency_factor])

      unless lo < hi do
        raise ArgumentError,
              "#{@rope}: :low_frequency_factor (#{lo}) must be below :high_frequency_factor (#{hi})"
      end

      %{
        struct
        | scaling: :llama3,
          factor: positive!(:factor, m[:factor]),
          low_frequency_factor: lo,
          high_frequency_factor: hi,
          original_max_positions: positive_integer!(m[:original_max_positions])
      }
    end

    defp rope_scaling!(_struct, other, _length, _dims) do
      raise ArgumentError,
            "#{@rope}: :scaling must be nil or a map with :type :linear, :dynamic or :llama3, " <>
              "got #{inspect(other)}"
    end

    defp positive!(_name, v) when is_number(v) and v > 0, do: v * 1.0

    defp positive!(name, v) do
      raise ArgumentError, "#{@rope}: :#{name} must be a number above 0, got #{inspect(v)}"
    end

    defp positive_integer!(v) when is_integer(v) and v > 0, do: v

    defp positive_integer!(v) do
      raise ArgumentError,
            "#{@rope}: :original_max_positions must be a positive integer, got #{inspect(v)}"
    end

    defp sdpa_scale!(nil, d), do: 1.0 / :math.sqrt(max(d, 1))
    defp sdpa_scale!(s, _d) when is_number(s), do: s * 1.0

    defp sdpa_scale!(s, _d) do
      raise ArgumentError,
            "Emily.Fast.scaled_dot_product_attention: :scale must be a number, got: #{inspect(s)}"
    end

    defp sdpa_check!(q, k, v, mask, sinks) do
      name = "Emily.Fast.scaled_dot_product_attention"
      named = [q: q, k: k, v: v, mask: mask, sinks: sinks] |> Enum.reject(&(elem(&1, 1) == nil))

      for {arg, t} <- named, t.vectorized_axes != [] do
        raise ArgumentError, "#{name}: #{arg} must not be vectorized"
      end

      unless float?(q.type) do
        raise ArgumentError,
              "#{name}: q must be a float tensor (f16, bf16, f32 or f64), " <>
                "got #{Nx.Type.to_string(q.type)}"
      end

      for {arg, t} <- [k: k, v: v], t.type != q.type do
        raise ArgumentError,
              "#{name}: #{arg} must have q's type #{Nx.Type.to_string(q.type)}, " <>
                "got #{Nx.Type.to_string(t.type)}"
      end

      for {arg, t, layout} <- [
            {:q, q, "B, Hq, Sq, D"},
            {:k, k, "B, Hkv, Skv, D"},
            {:v, v, "B, Hkv, Skv, Dv"}
          ],
          tuple_size(t.shape) != 4 do
        raise ArgumentError,
              "#{name}: #{arg} must have rank 4 (#{layout}), got #{inspect(t.shape)}"
      end

      {b, hq, sq, d} = q.shape
      {kb, hkv, skv, kd} = k.shape
      {vb, vh, vs, _} = v.shape

      if kb != b or vb != b or kd != d or vh != hkv or vs != skv or rem(hq, hkv) != 0 do
        raise ArgumentError,
              "#{name}: expected k {B, Hkv, Skv, D} and v {B, Hkv, Skv, Dv} for q " <>
                "{B, Hq, Sq, D} with Hq a multiple of Hkv, got q #{inspect(q.shape)}, " <>
                "k #{inspect(k.shape)}, v #{inspect(v.shape)}"
      end

      if mask do
        unless mask.type == {:u, 8} or float?(mask.type) do
          raise ArgumentError,
                "#{name}: mask must be u8 (a boolean mask) or a float type (an additive " <>
                  "mask), got #{Nx.Type.to_string(mask.type)}"
        end

        full = {b, hq, sq, skv}
        ms = Tuple.to_list(mask.shape)
        tail = full |> Tuple.to_list() |> Enum.take(-length(ms))

        unless length(ms) <= 4 and Enum.all?(Enum.zip(ms, tail), fn {m, f} -> m in [1, f] end) do
          raise ArgumentError,
                "#{name}: mask of shape #{inspect(mask.shape)} does not broadcast to " <>
                  "{B, Hq, Sq, Skv} = #{inspect(full)}"
        end
      end

      if sinks do
        unless float?(sinks.type) and sinks.shape == {hq} do
          raise ArgumentError,
                "#{name}: sinks must be a float tensor of shape {#{hq}} (Hq), got " <>
                  "#{Nx.Type.to_string(sinks.type)} #{inspect(sinks.shape)}"
        end
      end

      :ok
    end

    defp epsilon!(_name, eps) when is_float(eps), do: eps
    defp epsilon!(_name, eps) when is_integer(eps), do: eps * 1.0

    defp epsilon!(name, eps) do
      raise ArgumentError,
            "Emily.Fast.#{name}: :epsilon must be a number, got: #{inspect(eps)}"
    end

    @arg_names [:x, :gamma, :beta]

    defp run(name, struct, inputs) do
      [x | params] = inputs = Enum.map(inputs, &Nx.to_tensor/1)
      check!(name, inputs)
      vectorized = x.vectorized_axes
      x = Nx.devectorize(x, keep_names: false)
      args = [x | params]
      out = Nx.template(x.shape, output_type(args), names: x.names)
      result = block(struct, args, out)
      if vectorized == [], do: result, else: Nx.vectorize(result, vectorized)
    end

    if @block? do
      defp block(struct, args, out), do: Nx.block(struct, args, out, spread(&fallback/2, args))

      # Nx.block/4 calls its fallback with the struct and each argument
      defp spread(fun, [_, _]), do: fn s, x, g -> fun.(s, [x, g]) end
      defp spread(fun, [_, _, _]), do: fn s, x, g, b -> fun.(s, [x, g, b]) end
      defp spread(fun, [_, _, _, _]), do: fn s, a, b, c, d -> fun.(s, [a, b, c, d]) end
      defp spread(fun, [_, _, _, _, _]), do: fn s, a, b, c, d, e -> fun.(s, [a, b, c, d, e]) end
    else
      defp block(struct, args, _out), do: fallback(struct, args)
    end

    @doc false
    # The composed form (defn-able: only Nx operations), what every
    # backend without its own kernel runs, and what gradients follow.
    def fallback(%LayerNorm{epsilon: eps}, [x | _] = args) do
      [gamma | beta] = tl(args)
      out_type = output_type(args)
      {w, a} = {stat_type(x), affine_type(out_type)}
      x = Nx.as_type(x, w)
      mean = Nx.mean(x, axes: [-1], keep_axes: true)
      c = Nx.subtract(x, mean)
      var = Nx.mean(Nx.multiply(c, c), axes: [-1], keep_axes: true)
      # Axon's select(var >= eps, rsqrt(var + eps), rsqrt(eps)) as the rsqrt
      # of a select (the same bits), so that no op runs on eps alone: its
      # scalar is a Nx.BinaryBackend tensor, which every backend takes
      e = epsilon_tensor(eps, w)
      kept = Nx.select(Nx.greater_equal(var, e), var, 0.0)
      r = Nx.rsqrt(Nx.add(kept, e))
      scale = Nx.multiply(Nx.as_type(gamma, a), Nx.as_type(r, a))
      y = Nx.multiply(scale, Nx.as_type(c, a))

      y =
        case beta do
          [] -> y
          [beta] -> Nx.add(y, Nx.as_type(beta, a))
        end

      Nx.as_type(y, out_type)
    end

    def fallback(%RMSNorm{epsilon: eps}, [x, gamma] = args) do
      out_type = output_type(args)
      {w, a} = {stat_type(x), affine_type(out_type)}
      xw = Nx.as_type(x, w)
      ms = Nx.mean(Nx.multiply(xw, xw), axes: [-1], keep_axes: true)
      z = xw |> Nx.multiply(Nx.rsqrt(Nx.add(ms, epsilon_tensor(eps, w)))) |> Nx.as_type(x.type)
      Nx.as_type(z, a) |> Nx.multiply(Nx.as_type(gamma, a)) |> Nx.as_type(out_type)
    end

    # Scaled dot-product attention, step by step as emily/ops_fast.h writes
    # it (W the work type, T q's type): Bumblebee's attention_weights_impl
    # and attention_output_impl with the scores and the softmax in W, a
    # bottom-right aligned causal mask, -inf for masked keys, sinks as one
    # more column of logits, and fully masked rows set to 0.
    def fallback(%SDPA{} = s, [q, k, v | rest]) do
      {mask, sinks} =
        case {s.mask, s.sinks, rest} do
          {false, false, []} -> {nil, nil}
          {true, false, [m]} -> {m, nil}
          {false, true, [sk]} -> {nil, sk}
          {true, true, [m, sk]} -> {m, sk}
        end

      t = q.type
      w = stat_type(q)
      {b, hq, sq, _d} = q.shape
      {_, hkv, skv, _} = k.shape
      group = div(hq, hkv)
      neg_inf = Nx.Constants.neg_infinity(w, backend: Nx.BinaryBackend)

      qw = Nx.as_type(q, w)
      kw = k |> repeat_heads(group) |> Nx.as_type(w)
      vw = v |> repeat_heads(group) |> Nx.as_type(w)

      scores = Nx.dot(qw, [3], [0, 1], kw, [3], [0, 1])
      a = Nx.multiply(scores, Nx.tensor(s.scale, type: w, backend: Nx.BinaryBackend))

      a =
        if mask != nil and mask.type != {:u, 8},
          do: Nx.add(a, Nx.as_type(mask, w)),
          else: a

      keep =
        [
          s.causal &&
            Nx.greater_equal(
              Nx.add(Nx.iota({sq, 1}), skv - sq),
              Nx.iota({1, skv})
            ),
          mask != nil and mask.type == {:u, 8} && Nx.not_equal(mask, 0)
        ]
        |> Enum.filter(& &1)
        |> Enum.reduce(nil, fn m, acc -> if acc == nil, do: m, else: Nx.logical_and(acc, m) end)

      # (Nx.select takes its result's shape from the predicate)
      logits = if keep == nil, do: a, else: Nx.select(Nx.broadcast(keep, a.shape), a, neg_inf)

      extended =
        if sinks == nil do
          logits
        else
          column =
            sinks |> Nx.as_type(w) |> Nx.reshape({1, hq, 1, 1}) |> Nx.broadcast({b, hq, sq, 1})

          Nx.concatenate([logits, column], axis: 3)
        end

      m = Nx.reduce_max(extended, axes: [3], keep_axes: true)
      m = Nx.select(Nx.equal(m, neg_inf), Nx.tensor(0, type: w, backend: Nx.BinaryBackend), m)
      e = Nx.exp(Nx.subtract(extended, m))
      z = Nx.sum(e, axes: [3], keep_axes: true)
      z = Nx.select(Nx.equal(z, 0), Nx.tensor(1, type: w, backend: Nx.BinaryBackend), z)
      p = Nx.divide(e, z)
      p = if sinks == nil, do: p, else: Nx.slice_along_axis(p, 0, skv, axis: 3)

      # every key masked: 0, with or without a sink
      live = Nx.not_equal(Nx.reduce_max(logits, axes: [3], keep_axes: true), neg_inf)

      p =
        Nx.select(Nx.broadcast(live, p.shape), p, Nx.tensor(0, type: w, backend: Nx.BinaryBackend))

      p = p |> Nx.as_type(t) |> Nx.as_type(w)
      Nx.dot(p, [3], [0, 1], vw, [2], [0, 1]) |> Nx.as_type(t)
    end

    # Rotary embedding, step by step as emily/ops_fast.h writes it: the
    # frequency table, the angles and cos/sin (in f64, rounded to f32) and
    # Bumblebee's x * cos + rotate_half(x) * sin in x's type T. Every
    # rounding is an explicit Nx.as_type, so that any backend computing
    # f64 cos/pow well gives the engine's bits.
    def fallback(%Rope{} = r, [x, positions | table]) do
      t = x.type
      {_, s, _, d} = x.shape
      half = div(r.dims, 2)

      inv =
        case table do
          [tbl] -> Nx.as_type(tbl, :f32)
          [] -> rope_table(r, s)
        end

      p = Nx.as_type(positions, :f64)

      p =
        if r.scaling == :linear,
          do: p |> Nx.divide(f32_const(r.factor, :f64)) |> Nx.as_type(:f32) |> Nx.as_type(:f64),
          else: p

      # {S, half} or {B, S, half}, then {1 or B, S, 1, half}
      angle =
        p
        |> Nx.new_axis(-1)
        |> Nx.multiply(Nx.as_type(inv, :f64))
        |> Nx.as_type(:f32)
        |> Nx.as_type(:f64)

      angle = if tuple_size(positions.shape) == 1, do: Nx.new_axis(angle, 0), else: angle
      angle = Nx.new_axis(angle, 2)
      c = angle |> Nx.cos() |> Nx.as_type(:f32) |> Nx.as_type(t)
      sn = angle |> Nx.sin() |> Nx.as_type(:f32) |> Nx.as_type(t)

      rot = Nx.slice_along_axis(x, 0, r.dims, axis: 3)

      {u, v} =
        if r.traditional do
          {b, s, h, _} = x.shape
          pairs = Nx.reshape(rot, {b, s, h, half, 2})
          {pairs[[.., .., .., .., 0]], pairs[[.., .., .., .., 1]]}
        else
          {Nx.slice_along_axis(rot, 0, half, axis: 3),
           Nx.slice_along_axis(rot, half, half, axis: 3)}
        end

      u2 = Nx.subtract(Nx.multiply(u, c), Nx.multiply(v, sn))
      v2 = Nx.add(Nx.multiply(v, c), Nx.multiply(u, sn))

      rotated =
        if r.traditional do
          Nx.stack([u2, v2], axis: 4) |> Nx.reshape(put_elem(x.shape, 3, r.dims))
        else
          Nx.concatenate([u2, v2], axis: 3)
        end

      if r.dims == d,
        do: rotated,
        else:
          Nx.concatenate([rotated, Nx.slice_along_axis(x, r.dims, d - r.dims, axis: 3)], axis: 3)
    end

    # The f32 table inv_i = f32(1 / f32(pow(f32(base'), f32(2i / dims)))),
    # then llama3's bands in f32.
    defp rope_table(r, s) do
      half = div(r.dims, 2)
      base = rope_base(r, s)

      e =
        Nx.iota({half}, type: :f64, backend: Nx.BinaryBackend)
        |> Nx.multiply(2)
        |> Nx.divide(r.dims)
        |> Nx.as_type(:f32)
        |> Nx.as_type(:f64)

      inv =
        f32_const(base, :f64)
        |> Nx.pow(e)
        |> Nx.as_type(:f32)
        |> Nx.as_type(:f64)
        |> then(&Nx.divide(Nx.tensor(1.0, type: :f64, backend: Nx.BinaryBackend), &1))
        |> Nx.as_type(:f32)

      if r.scaling == :llama3, do: llama3_table(r, inv), else: inv
    end

    defp rope_base(%Rope{scaling: :dynamic} = r, s) do
      len = r.sequence_length || s
      {f, o} = {r.factor, r.original_max_positions}

      if len > o,
        do: r.base * :math.pow(f * len / o - (f - 1), r.dims / (r.dims - 2)),
        else: r.base
    end

    defp rope_base(r, _s), do: r.base

    # Hugging Face's _compute_llama3_parameters (Bumblebee's llama3 strategy),
    # every step in f32
    defp llama3_table(r, inv) do
      o = r.original_max_positions
      c = &f32_const(&1, :f32)
      w = Nx.divide(c.(2 * :math.pi()), inv)
      smooth = w |> then(&Nx.divide(c.(o), &1)) |> Nx.subtract(c.(r.low_frequency_factor))
      band = Nx.subtract(c.(r.high_frequency_factor), c.(r.low_frequency_factor))
      smooth = Nx.divide(smooth, band)
      low = Nx.subtract(c.(1.0), smooth) |> Nx.multiply(inv) |> Nx.divide(c.(r.factor))
      mid = Nx.add(low, Nx.multiply(smooth, inv))

      scaled =
        Nx.select(Nx.greater(w, c.(o / r.low_frequency_factor)), Nx.divide(inv, c.(r.factor)), mid)

      Nx.select(Nx.less(w, c.(o / r.high_frequency_factor)), inv, scaled)
    end

    # v rounded to f32, as a scalar of type (f32 or f64, then exact)
    defp f32_const(v, type) do
      Nx.tensor(v * 1.0, type: :f32, backend: Nx.BinaryBackend) |> Nx.as_type(type)
    end

    # {B, Hkv, S, D} -> {B, Hkv * group, S, D}, head h from kv head div(h, group)
    defp repeat_heads(t, 1), do: t

    defp repeat_heads(t, group) do
      {b, h, s, d} = t.shape

      t
      |> Nx.new_axis(2)
      |> Nx.broadcast({b, h, group, s, d})
      |> Nx.reshape({b, h * group, s, d})
    end

    # eps as a W scalar. Not the number itself: eagerly Nx makes a float
    # number an f32 tensor even next to an f64 one, while defn keeps it
    # exact, and the result must not depend on that.
    defp epsilon_tensor(eps, w), do: Nx.tensor(eps, type: w, backend: Nx.BinaryBackend)

    defp stat_type(%{type: {:f, 64}}), do: {:f, 64}
    defp stat_type(_), do: {:f, 32}

    defp affine_type({:f, 64}), do: {:f, 64}
    defp affine_type(_), do: {:f, 32}

    defp output_type(args), do: args |> Enum.map(& &1.type) |> Enum.reduce(&Nx.Type.merge(&2, &1))

    defp check!(name, [x | params] = inputs) do
      for {t, arg} <- Enum.zip(inputs, @arg_names) do
        unless float?(t.type) do
          raise ArgumentError,
                "Emily.Fast.#{name}: #{arg} must be a float tensor (f16, bf16, f32 or f64), " <>
                  "got #{Nx.Type.to_string(t.type)}"
        end
      end

      for {t, arg} <- Enum.zip(params, tl(@arg_names)), t.vectorized_axes != [] do
        raise ArgumentError, "Emily.Fast.#{name}: #{arg} must not be vectorized"
      end

      if x.shape == {} do
        raise ArgumentError,
              "Emily.Fast.#{name}: x must have rank 1 or more (the last axis is normalized), " <>
                "got a scalar"
      end

      n = elem(x.shape, tuple_size(x.shape) - 1)

      for {t, arg} <- Enum.zip(params, tl(@arg_names)), t.shape != {n} do
        raise ArgumentError,
              "Emily.Fast.#{name}: #{arg} must have shape {#{n}} (the last axis of x, " <>
                "#{inspect(x.shape)}), got #{inspect(t.shape)}"
      end

      :ok
    end
  end
end
