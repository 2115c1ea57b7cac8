if Code.ensure_loaded?(Nx) do
  defmodule Emily.Quantization do
    @moduledoc """
    Affine weight quantization (2, 4 or 8 bits, groups of 32, 64 or 128)
    and a fused quantized matmul, callable from `defn` and on any backend.

        qw = Emily.Quantization.quantize(w, bits: 4, group_size: 64)  # w {n, k}
        y = Emily.Quantization.dot(x, qw)                              # x . w^T: {..., n}
        y = Emily.Quantization.dense(x, qw, bias)

    A weight matrix `w` of shape `{n, k}` (`k` a multiple of the group
    size) is cut along `k` into groups; each group keeps a scale and a bias
    in `w`'s type and one code of `bits` bits per element:
    `w ~ code * scale + bias`, codes packed into a `{n, k * bits / 8}` u8
    tensor, low bits first. `dot/2` multiplies by the dequantized matrix
    transposed, as a dense layer does, without materializing it on Emily.

    `quantize_tensor/2` makes a quantized matrix that is an `Nx.Tensor`
    (on `Emily.Backend`), which `Nx.dot` (eagerly, and in functions
    compiled by `Emily.Compiler`) multiplies by without dequantizing, and
    every other operation reads as its dequantized matrix; with it a
    model's unchanged code runs on quantized weights
    (`quantize_model/2`):

        kernel = Emily.Quantization.quantize_tensor(kernel, bits: 4)   # {in, out}
        Nx.dot(x, kernel)                                              # quantized_matmul

    Each of quantize/2, dequantize/1 and dot/2 is one `Nx.block/4` with a struct of this module and a
    composed fallback of ordinary Nx operations: `Emily.Backend` (eager)
    and `Emily.Compiler` (in a graph) run the engine's kernels
    (`include/emily/ops_quant.h`, which states the exact rounding);
    every other backend runs the fallback. The fallback's codes, scales,
    biases and dequantized weights are the engine's bits for finite
    weights; `dot/2`'s result is within the bound of a reordered sum of
    it (the fallback is a dot of `x` and the dequantized weights, both in
    f32 (f64 when `x` or the scales are f64)). See docs/quantization.md.
    """

    import Emily.FloatTypes, only: [float?: 1]

    defmodule Weight do
      @moduledoc """
      A quantized weight matrix (`Emily.Quantization.quantize/2`): `packed`
      (u8 codes, `{n, k * bits / 8}`), `scales` and `biases` (`{n, k /
      group_size}`, the original type), `bits`, `group_size` and the
      original `shape` `{n, k}`. An `Nx.Container`: it passes through
      `defn` and `Nx.backend_transfer/2` like a tuple of its tensors.
      """
      @derive {Nx.Container,
               containers: [:packed, :scales, :biases], keep: [:bits, :group_size, :shape]}
      defstruct [:packed, :scales, :biases, :bits, :group_size, :shape]
    end

    defmodule Quantize do
      @moduledoc "The `Nx.block/4` struct of `Emily.Quantization.quantize/2`."
      defstruct bits: 4, group_size: 64
    end

    defmodule Dequantize do
      @moduledoc "The `Nx.block/4` struct of `Emily.Quantization.dequantize/1`."
      defstruct bits: 4, group_size: 64
    end

    defmodule Matmul do
      @moduledoc "The `Nx.block/4` struct of `Emily.Quantization.dot/2`."
      defstruct bits: 4, group_size: 64, transpose: true
    end

    @block? function_exported?(Nx, :block, 4)

    @doc """
    Quantizes a float matrix `{n, k}` along its last axis. Options:
    `:bits` (2, 4 or 8; default 4), `:group_size` (32, 64 or 128; default
    64).
    """
    def quantize(tensor, opts \\ []) do
      opts = Keyword.validate!(opts, bits: 4, group_size: 64)
      {bits, gs} = {opts[:bits], opts[:group_size]}
      check_options!(bits, gs)
      w = Nx.to_tensor(tensor)

      unless float?(w.type) do
        raise ArgumentError,
              "Emily.Quantization.quantize: the tensor must be a float tensor (f16, bf16, f32 " <>
                "or f64), got #{Nx.Type.to_string(w.type)}"
      end

      case w.shape do
        {n, k} when rem(k, gs) == 0 ->
          out =
            {Nx.template({n, div(k * bits, 8)}, {:u, 8}), Nx.template({n, div(k, gs)}, w.type),
             Nx.template({n, div(k, gs)}, w.type)}

          {packed, scales, biases} =
            block(%Quantize{bits: bits, group_size: gs}, [w], out, &fallback/2)

          %Weight{
            packed: packed,
            scales: scales,
            biases: biases,
            bits: bits,
            group_size: gs,
            shape: w.shape
          }

        shape ->
          raise ArgumentError,
                "Emily.Quantization.quantize: the tensor must be a matrix {n, k} with k a " <>
                  "multiple of the group size #{gs}, got shape #{inspect(shape)}"
      end
    end

    @doc "The dequantized matrix (the original's shape and type)."
    def dequantize(%Weight{} = qw) do
      out = Nx.template(qw.shape, qw.scales.type)

      block(
        %Dequantize{bits: qw.bits, group_size: qw.group_size},
        [qw.packed, qw.scales, qw.biases],
        out,
        &fallback/2
      )
    end

    @doc """
    `x . w^T` for the quantized `w` `{n, k}`: `x` is `{..., k}`, the result
    `{..., n}` of type `Nx.Type.merge(x.type, w.type)`.
    """
    def dot(x, %Weight{shape: {n, k}} = qw) do
      x = Nx.to_tensor(x)

      unless float?(x.type) do
        raise ArgumentError,
              "Emily.Quantization.dot: x must be a float tensor (f16, bf16, f32 or f64), got " <>
                Nx.Type.to_string(x.type)
      end

      if x.shape == {} or elem(x.shape, tuple_size(x.shape) - 1) != k do
        raise ArgumentError,
              "Emily.Quantization.dot: x's last axis must be #{k} (the weights are " <>
                "#{inspect({n, k})}, used transposed), got shape #{inspect(x.shape)}"
      end

      out_shape = put_elem(x.shape, tuple_size(x.shape) - 1, n)
      out = Nx.template(out_shape, Nx.Type.merge(x.type, qw.scales.type))
      struct = %Matmul{bits: qw.bits, group_size: qw.group_size, transpose: true}
      block(struct, [x, qw.packed, qw.scales, qw.biases], out, &fallback/2)
    end

    @doc """
    Quantizes a float matrix into a tensor of the same shape, type and
    names whose data is the quantized form (`Emily.Backend`). Options:

      * `:bits` (2, 4 or 8; default 4), `:group_size` (32, 64 or 128;
        default 64), as `quantize/2`;
      * `:axis` - the axis the groups run along, which must be the axis
        that dots contract: `0` (default) for a `{in, out}` kernel used as
        `Nx.dot(x, kernel)` (Axon's and Bumblebee's dense layers), `1` for
        a `{out, in}` weight used as `Nx.dot(x, [-1], w, [1])` (PyTorch's
        layout). Its size must be a multiple of the group size.

    The values are those of `quantize/2` (of the matrix, or of its
    transpose for axis 0): exactly `dequantize_tensor/1`'s. `Nx.dot` of
    such a tensor and a float tensor (either operand order, one contracted
    axis, no batch axes) runs the engine's `quantized_matmul` on the packed
    codes, bit for bit `dot/2`'s result; every other operation (and a dot
    of another form) reads the dequantized matrix. `Nx.to_binary/1` and
    copies to other backends give the dequantized values; copies and
    transfers to `Emily.Backend` (another device) keep it quantized.

    The tensor is copied to `Emily.Backend` (the CPU) first unless it is
    an Emily tensor already (then its device is kept). Not callable inside
    `defn` (quantize before, and pass the result as an argument).
    """
    def quantize_tensor(tensor, opts \\ []) do
      opts = Keyword.validate!(opts, bits: 4, group_size: 64, axis: 0)
      {bits, gs} = {opts[:bits], opts[:group_size]}
      check_options!(bits, gs)
      t = Nx.to_tensor(tensor)

      case t.data do
        %Nx.Defn.Expr{} ->
          raise ArgumentError,
                "Emily.Quantization.quantize_tensor: not callable inside defn (quantize the " <>
                  "weights before and pass the quantized tensors as arguments)"

        %Emily.Backend{ref: {:quantized, _, _}} ->
          raise ArgumentError, "Emily.Quantization.quantize_tensor: the tensor is quantized already"

        _ ->
          :ok
      end

      unless float?(t.type) do
        raise ArgumentError,
              "Emily.Quantization.quantize_tensor: the tensor must be a float tensor (f16, bf16, " <>
                "f32 or f64), got #{Nx.Type.to_string(t.type)}"
      end

      axis =
        case {opts[:axis], t.shape} do
          {a, {_, _}} when a in [0, -2] ->
            0

          {a, {_, _}} when a in [1, -1] ->
            1

          {a, {_, _}} ->
            raise ArgumentError,
                  "Emily.Quantization.quantize_tensor: :axis must be 0 or 1, got: #{inspect(a)}"

          {_, shape} ->
            raise ArgumentError,
                  "Emily.Quantization.quantize_tensor: the tensor must be a matrix, got shape #{inspect(shape)}"
        end

      if rem(elem(t.shape, axis), gs) != 0 do
        raise ArgumentError,
              "Emily.Quantization.quantize_tensor: axis #{axis} (the grouped axis) must be a " <>
                "multiple of the group size #{gs}, got shape #{inspect(t.shape)}"
      end

      t = if match?(%Emily.Backend{}, t.data), do: t, else: Nx.backend_copy(t, Emily.Backend)
      stored = if axis == 0, do: Nx.transpose(t), else: t
      weight = quantize(stored, bits: bits, group_size: gs)
      %{t | data: %Emily.Backend{ref: {:quantized, weight, axis == 0}}}
    end

    @doc "Whether `tensor` is a quantized matrix of `quantize_tensor/2`."
    def quantized?(%Nx.Tensor{data: %Emily.Backend{ref: {:quantized, _, _}}}), do: true
    def quantized?(_), do: false

    @doc """
    The float matrix a quantized tensor stands for (an Emily tensor of
    its shape and type); other tensors are returned as they are.
    """
    def dequantize_tensor(%Nx.Tensor{data: %Emily.Backend{ref: {:quantized, _, _}}} = q),
      do: Emily.Backend.dequantized(q)

    def dequantize_tensor(%Nx.Tensor{} = t), do: t

    @doc """
    The `%Weight{}` a quantized tensor holds and whether the tensor is its
    transpose (`{weight, true}` for a tensor quantized along axis 0).
    """
    def weight(%Nx.Tensor{data: %Emily.Backend{ref: {:quantized, weight, transposed?}}}),
      do: {weight, transposed?}

    def weight(other) do
      raise ArgumentError,
            "Emily.Quantization.weight: not a quantized tensor: #{inspect(Nx.to_template(other))}"
    end

    @doc "A dense layer on quantized weights: `dot(x, qw) + bias` (`bias` may be nil)."
    def dense(x, qw, bias \\ nil)
    def dense(x, %Weight{} = qw, nil), do: dot(x, qw)
    def dense(x, %Weight{} = qw, bias), do: Nx.add(dot(x, qw), bias)

    @doc """
    Replaces the dense kernels of a model's parameters (a map of layer
    names to maps of parameter names to tensors, as Axon and Bumblebee
    keep them) by quantized weights. An Axon dense kernel is `{in, out}`:
    its transpose `{out, in}` is quantized, so that `dense(x, qw, bias)`
    computes the layer's `x . kernel + bias`. Kernels whose `in` is not a
    multiple of the group size, and every other parameter, are kept.

    Options: `:bits`, `:group_size` (as `quantize/2`), `:only` (a function
    of the layer's name returning whether to quantize it; default: every
    layer with a rank-2 "kernel").
    """
    def quantize_params(params, opts \\ []) do
      {only, opts} = Keyword.pop(opts, :only, fn _ -> true end)
      opts = Keyword.validate!(opts, bits: 4, group_size: 64)

      case params do
        # Axon 0.7's %Axon.ModelState{}: its parameters are under :data
        %{__struct__: _, data: data} -> %{params | data: quantize_layers(data, only, opts)}
        %{} -> quantize_layers(params, only, opts)
      end
    end

    @doc """
    Quantizes the dense kernels of a model's parameters in place: each
    selected kernel becomes `quantize_tensor(kernel, axis: 0, ...)`, so the
    model's own `Nx.dot(x, kernel)` runs quantized, with no change to its
    code. `params` is a map of maps of tensors (any depth; Axon's and
    Bumblebee's `%{"layer name" => %{"kernel" => t, "bias" => t}}`) or an
    `%Axon.ModelState{}` (its `data` is quantized).

    A kernel is a rank-2 float tensor under the key `"kernel"` whose first
    axis (`in`) is a multiple of the group size; the others, and every
    other parameter (biases, norms), are kept. By default every kernel is
    quantized except those of layers whose name contains `"embed"`
    (embedding tables are `"kernel"`s too, read by `Nx.take`, which
    would dequantize the whole table).

    Options: `:bits`, `:group_size` (as `quantize/2`) and `:filter`, a
    function of the layer's name (the keys leading to the kernel's map,
    joined with `"."`) and the kernel tensor returning whether to quantize
    it (it replaces the default choice; kernels whose `in` is not a
    multiple of the group size are kept whatever it says).
    """
    def quantize_model(params, opts \\ []) do
      {filter, opts} = Keyword.pop(opts, :filter, &default_filter/2)
      opts = Keyword.validate!(opts, bits: 4, group_size: 64)
      check_options!(opts[:bits], opts[:group_size])

      unless is_function(filter, 2) do
        raise ArgumentError,
              "Emily.Quantization.quantize_model: :filter must be a function of 2 arguments " <>
                "(the layer's name and its kernel), got: #{inspect(filter)}"
      end

      case params do
        # Axon 0.7's %Axon.ModelState{}: its parameters are under :data
        %{__struct__: Axon.ModelState, data: data} ->
          %{params | data: quantize_kernels(data, nil, filter, opts)}

        %{__struct__: _} ->
          raise ArgumentError,
                "Emily.Quantization.quantize_model: expected a map of parameters or an " <>
                  "%Axon.ModelState{}, got: #{inspect(params, limit: 3)}"

        %{} ->
          quantize_kernels(params, nil, filter, opts)

        other ->
          raise ArgumentError,
                "Emily.Quantization.quantize_model: expected a map of parameters or an " <>
                  "%Axon.ModelState{}, got: #{inspect(other, limit: 3)}"
      end
    end

    defp default_filter(layer, _kernel),
      do: not String.contains?(String.downcase(layer || ""), "embed")

    defp quantize_kernels(map, path, filter, opts) do
      gs = opts[:group_size]

      Map.new(map, fn
        {"kernel", %Nx.Tensor{shape: {i, _}, type: type} = kernel} = kept ->
          if rem(i, gs) == 0 and float?(type) and not quantized?(kernel) and
               filter.(path, kernel) do
            {"kernel", quantize_tensor(kernel, Keyword.put(opts, :axis, 0))}
          else
            kept
          end

        {key, %{} = inner} when not is_struct(inner) ->
          {key, quantize_kernels(inner, join(path, key), filter, opts)}

        other ->
          other
      end)
    end

    defp join(nil, key), do: to_string(key)
    defp join(path, key), do: "#{path}.#{key}"

    defp quantize_layers(params, only, opts) do
      gs = opts[:group_size]

      Map.new(params, fn
        {layer, %{"kernel" => %Nx.Tensor{shape: {i, _}} = kernel} = layer_params}
        when rem(i, gs) == 0 ->
          if only.(layer) do
            {layer, Map.put(layer_params, "kernel", quantize(Nx.transpose(kernel), opts))}
          else
            {layer, layer_params}
          end

        other ->
          other
      end)
    end

    @doc """
    Reads a GGUF file (llama.cpp's format; `docs/gguf.md`): returns
    `%{metadata: %{key => value}, tensors: %{name => tensor_or_weight}}`.

    Plain tensors (F32, F16, BF16, F64, I8..I64) come back as Emily
    tensors of their Nx shape (the file's dimensions reversed). Q8_0,
    Q4_0, Q4_1 and Q4_K tensors come back as `%Weight{}` without being
    dequantized (bits 8 or 4, group size 32, shape `{n, k}` with `n` the
    product of the leading dimensions), ready for `dot/2` and `dense/3`
    (`x . w^T`); `dequantize/1` gives ggml's values exactly with f32
    scales. Metadata values are integers, floats, binaries, booleans and
    lists.

    Options: `:scale_type` (`{:f, 32}` default, exact; `{:f, 16}` or
    `{:bf, 16}`, rounded where not exact), `:only` (a list of tensor
    names to load; default all), `:device` (`:cpu` default), `:as`
    (`:weights`, the default: block-format tensors as `%Weight{}`;
    `:tensors`: as quantized `Nx.Tensor`s like `quantize_tensor/2`'s,
    of shape `{n, k}` and the scales' type, grouped along their last axis
    (`axis: 1`), so that `Nx.dot(x, [-1], w, [1])` (`x . w^T`, the file's
    `{out, in}` layout) is the fused quantized matmul, eagerly and under
    `Emily.Compiler`, and every other use reads the dequantized values).
    Raises `ArgumentError` with the reader's message for a malformed
    file, an unknown name or a tensor type Emily does not load (Q6_K, ...).
    """
    def load_gguf(path, opts \\ []) do
      opts = Keyword.validate!(opts, scale_type: {:f, 32}, only: nil, device: :cpu, as: :weights)

      unless opts[:as] in [:weights, :tensors] do
        raise ArgumentError,
              "Emily.Quantization.load_gguf: :as must be :weights or :tensors, got: " <>
                inspect(opts[:as])
      end

      only = if opts[:only], do: Enum.map(opts[:only], &to_string/1)
      device = Emily.normalize_device(opts[:device])
      scale_type = Nx.Type.normalize!(opts[:scale_type])

      {:ok, meta, tensors} =
        Emily.Native.ok!(Emily.Native.gguf_load(to_string(path), scale_type, only, device))

      tensors =
        Map.new(tensors, fn
          {name, {:dense, data}} ->
            {name, gguf_tensor(data)}

          {name, {:quant, q, s, b, bits, gs}} ->
            packed = gguf_tensor(q)
            {n, _} = packed.shape
            k = div(elem(packed.shape, 1) * 8, bits)
            scales = gguf_tensor(s)
            weight = %Weight{packed: packed, scales: scales, biases: gguf_tensor(b)}
            weight = %{weight | bits: bits, group_size: gs, shape: {n, k}}
            {name, if(opts[:as] == :tensors, do: gguf_quantized(weight), else: weight)}
        end)

      %{metadata: Map.new(meta), tensors: tensors}
    end

    # a %Weight{} of the file's {out, in} layout as quantize_tensor/2's
    # tensor grouped along axis 1 (not transposed)
    defp gguf_quantized(%Weight{shape: shape, scales: scales} = weight) do
      %Nx.Tensor{
        data: %Emily.Backend{ref: {:quantized, weight, false}},
        type: scales.type,
        shape: shape,
        names: [nil, nil]
      }
    end

    defp gguf_tensor(%{ref: ref} = data) do
      {type, shape, _device} = Emily.Native.ok!(Emily.Native.tensor_info(ref))

      %Nx.Tensor{
        data: data,
        type: type,
        shape: shape,
        names: List.duplicate(nil, tuple_size(shape))
      }
    end

    defp block(struct, args, out, fallback) do
      if @block? do
        Nx.block(struct, args, out, spread(fallback, length(args)))
      else
        fallback.(struct, args)
      end
    end

    # Nx.block/4 calls its fallback with the struct and each argument
    defp spread(fun, 1), do: fn s, a -> fun.(s, [a]) end
    defp spread(fun, 3), do: fn s, a, b, c -> fun.(s, [a, b, c]) end
    defp spread(fun, 4), do: fn s, a, b, c, d -> fun.(s, [a, b, c, d]) end

    @doc false
    # The composed forms (defn-able: only Nx operations), what every other
    # backend runs, and what gradients follow.
    def fallback(%Quantize{bits: bits, group_size: gs}, [w]) do
      {n, k} = w.shape
      work = work_type(w.type)
      levels = Integer.pow(2, bits) - 1
      wg = w |> Nx.as_type(work) |> Nx.reshape({n, div(k, gs), gs})
      lo = Nx.reduce_min(wg, axes: [2], keep_axes: true)
      hi = Nx.reduce_max(wg, axes: [2], keep_axes: true)
      scales = Nx.subtract(hi, lo) |> Nx.divide(levels) |> Nx.as_type(w.type)
      biases = Nx.as_type(lo, w.type)
      {s, b} = {Nx.as_type(scales, work), Nx.as_type(biases, work)}
      v = Nx.divide(Nx.subtract(wg, b), s)
      zero = Nx.logical_or(Nx.equal(s, 0), Nx.is_nan(v))
      codes = v |> Nx.round() |> Nx.clip(0, levels)
      codes = Nx.select(zero, 0, codes) |> Nx.as_type({:u, 8})
      per = div(8, bits)
      shifts = Nx.multiply(Nx.iota({per}, type: {:u, 8}), bits)

      packed =
        codes
        |> Nx.reshape({n, div(k, per), per})
        |> Nx.left_shift(shifts)
        |> Nx.sum(axes: [2])
        |> Nx.as_type({:u, 8})

      {packed, Nx.reshape(scales, {n, div(k, gs)}), Nx.reshape(biases, {n, div(k, gs)})}
    end

    def fallback(%Dequantize{bits: bits, group_size: gs}, [packed, scales, biases]) do
      work = work_type(scales.type)
      packed |> decoded(scales, biases, bits, gs, work) |> Nx.as_type(scales.type)
    end

    def fallback(%Matmul{bits: bits, group_size: gs, transpose: transpose}, [x, q, s, b]) do
      acc = if work_type(x.type) == {:f, 64}, do: {:f, 64}, else: work_type(s.type)
      w = decoded(q, s, b, bits, gs, acc)
      contract = if transpose, do: 1, else: 0

      x
      |> Nx.as_type(acc)
      |> Nx.dot([Nx.rank(x) - 1], w, [contract])
      |> Nx.as_type(Nx.Type.merge(x.type, s.type))
    end

    # The weights, w = q * s + b in `work`, as a {rows, cols} matrix.
    defp decoded(packed, scales, biases, bits, gs, work) do
      {rows, nbytes} = packed.shape
      per = div(8, bits)
      cols = nbytes * per
      shifts = Nx.multiply(Nx.iota({per}, type: {:u, 8}), bits)

      codes =
        packed
        |> Nx.new_axis(-1)
        |> Nx.right_shift(shifts)
        |> Nx.bitwise_and(Integer.pow(2, bits) - 1)
        |> Nx.reshape({rows, div(cols, gs), gs})
        |> Nx.as_type(work)

      s = scales |> Nx.as_type(work) |> Nx.new_axis(-1)
      b = biases |> Nx.as_type(work) |> Nx.new_axis(-1)
      codes |> Nx.multiply(s) |> Nx.add(b) |> Nx.reshape({rows, cols})
    end

    defp work_type({:f, 64}), do: {:f, 64}
    defp work_type(_), do: {:f, 32}

    defp check_options!(bits, gs) do
      unless bits in [2, 4, 8] do
        raise ArgumentError, "Emily.Quantization: :bits must be 2, 4 or 8, got: #{inspect(bits)}"
      end

      unless gs in [32, 64, 128] do
        raise ArgumentError,
              "Emily.Quantization: :group_size must be 32, 64 or 128, got: #{inspect(gs)}"
      end
    end
  end
end
