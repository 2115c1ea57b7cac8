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
    vectorized. See docs/fast.md.
    """

    defmodule LayerNorm do
      @moduledoc "The `Nx.block/4` struct of `Emily.Fast.layer_norm/4`."
      defstruct epsilon: 1.0e-5
    end

    defmodule RMSNorm do
      @moduledoc "The `Nx.block/4` struct of `Emily.Fast.rms_norm/3`."
      defstruct epsilon: 1.0e-6
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

    defp float?({:f, bits}) when bits in [16, 32, 64], do: true
    defp float?({:bf, 16}), do: true
    defp float?(_), do: false
  end
end
