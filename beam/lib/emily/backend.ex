if Code.ensure_loaded?(Nx.Backend) do
  defmodule Emily.Backend do
    @moduledoc """
    An `Nx.Backend` on libemily.

        Nx.global_default_backend({Emily.Backend, device: :cpu})
        Nx.default_backend({Emily.Backend, device: :cuda})

    Options:

      * `:device` - `:cpu` (default), `:cuda` or `{:cuda, index}`.
      * `:dot_precision` - `:fast` or `:highest` for the `dot` and `conv`
        calls a process makes while this is its default backend
        (`Nx.default_backend/1`, `Nx.with_default_backend/2`); absent, the
        VM's `Emily.dot_precision/0`. `Emily.with_dot_precision/2` scopes
        it to a function instead. See `Emily.dot_precision/0`.

    Every callback of Nx 0.7 to 0.13 goes to the engine's callback
    dispatcher through `Emily.Native.dispatch/6`, in the forms Nx 0.13
    passes them (Nx 0.7's optional callbacks and Nx 0.12+'s `Nx.Block`
    structs reach the same dispatcher names). Only the callbacks that take
    an Elixir function (`reduce`, `window_reduce`, Nx 0.7's `map`) run
    through `Nx.BinaryBackend`; see `Emily.Telemetry` for the fallback
    events and configuration.

    Compile-time options (`config :emily, ...`):

      * `:add_backend_on_inspect` (default `true`) - prints
        `Emily.Backend<device>` above a tensor's values.
      * `:debug_bounds_check` (default `false`) - checks the indices of
        `gather`, `take`, `take_along_axis`, `indexed_add` and
        `indexed_put` before running them and raises `ArgumentError` naming
        the first index out of range.
      * `:debug_detect_nan_inf` (default `false`) - raises `ArgumentError`
        when a callback produces a NaN or an infinity (creation callbacks
        such as `constant` excepted).

      * `:by_value` (default `false`) - results on the CPU carry their
        bytes in the struct instead of an engine reference
        (`%Emily.Backend{ref: nil, bytes: binary}`), so that `==` compares
        two tensors by value, as it does on `Nx.BinaryBackend` (a reference
        is equal only to itself). Every operation still runs in the
        engine, but each use of such a tensor copies its bytes into the
        engine again, and views are copied out: meant for test suites that
        compare tensor structs (Nx's own suite, run by
        `beam/scripts/nx_suite` in its value mode), not for speed. Results
        on a GPU keep their reference.

    The debug options and `:by_value` cost nothing when off (they are not
    compiled in).

    Run-time option: `config :emily, linalg: :lapack | :reference`, read at
    each call of `qr`, `eigh` and `svd` (and `lu`, `solve` and `determinant`).
    `:lapack` (the default) runs LAPACK's Householder QR,
    divide-and-conquer eigh and SVD: fast and accurate to the dtype's
    precision, with Nx's sign conventions but not Nx's last bits.
    `:reference` runs the loaded Nx's own algorithms with its `:eps` and
    `:max_iter`, for results bit-identical to its `Nx.BinaryBackend`: on
    Nx 0.13, Householder QR, Jacobi eigh and the eigh-based SVD; on Nx
    0.7, also that version's lu (rows pivoted up front), eigh (Hessenberg
    reduction and QR iterations), the QDWH SVD on it and its qr-based
    solve. `lu`, `solve` and `determinant` compute Nx 0.13's LU otherwise.
    See docs/semantics.md.

    ## Quantized matrices

    `Emily.Quantization.quantize_tensor/2` makes a tensor whose data is
    `%Emily.Backend{ref: {:quantized, weight, transposed?}}`: the packed
    codes, scales and biases of an `%Emily.Quantization.Weight{}` (Emily
    tensors) standing for a float matrix, the weight itself or (when
    `transposed?`) its transpose. `dot` with such an operand and no batch
    axes runs the engine's `quantized_matmul`; every other callback
    dequantizes it first (the engine refuses it as it does another
    backend's tensor, and `run/5` retries with the dequantized matrix).
    See docs/quantization.md.

    ## Across nodes

    A tensor's data is `%Emily.Backend{ref: ref, bytes: bytes}`: `ref` is
    the engine tensor (a NIF resource, which means nothing on another
    node), and `bytes`, for a tensor contiguous in CPU memory, a binary
    over its bytes (no copy; `nil` for GPU tensors and non-contiguous views
    such as a transpose or a broadcast). Sent to another node (messages,
    `:erpc`, `Nx.Serving`'s distributed mode) or through
    `:erlang.term_to_binary/1`, a CPU tensor arrives with its bytes, and
    every callback reads it from them there (a copy per use, as for
    `Nx.BinaryBackend` tensors; `Nx.backend_copy/2` or
    `Nx.backend_transfer/2` to `Emily.Backend` makes it a local tensor
    once). A tensor without bytes raises `ArgumentError` at its first use
    there, saying how to copy it before sending.

    `Nx.backend_deallocate/1` makes the tensor unusable at once (every
    callback then raises "the tensor was deallocated"); its memory is
    freed at once too, except for a tensor whose struct carries bytes
    (CPU, contiguous): that buffer stays until the struct itself, and any
    binary taken from it, is collected.
    """

    @behaviour Nx.Backend

    # Every callback carries @impl. Those that only some of the supported
    # Nx versions declare (Nx 0.7's optional callbacks, which Nx 0.12+
    # passes as Nx.Block structs to block/4; 0.7's map; later versions'
    # pointers and stack) are marked from the loaded Nx's own list, so
    # that neither version warns.
    @callbacks Nx.Backend.behaviour_info(:callbacks)

    # ref: the engine tensor (a resource of this VM); bytes: a binary over
    # its bytes when they are contiguous in CPU memory, else nil; they
    # travel with the struct to other nodes ("Across nodes" above)
    defstruct [:ref, :bytes]

    alias Nx.Tensor, as: T
    alias Emily.Native
    import Emily.FloatTypes, only: [float?: 1]
    require Logger

    @bounds_check Application.compile_env(:emily, :debug_bounds_check, false)
    @detect_nan_inf Application.compile_env(:emily, :debug_detect_nan_inf, false)
    @add_signature Application.compile_env(:emily, :add_backend_on_inspect, true)
    @by_value Application.compile_env(:emily, :by_value, false)

    ## Options and devices

    @init_options [device: :cpu, dot_precision: nil]

    @impl true
    def init(opts) do
      unless Keyword.keyword?(opts) do
        raise ArgumentError, "Emily.Backend options must be a keyword list, got: #{inspect(opts)}"
      end

      # Keyword.validate/2 fills in the defaults and finds unknown keys; the
      # error names the backend, its options and the unknown keys in the
      # order given (Keyword.validate's own list may be in another order)
      opts =
        case Keyword.validate(opts, @init_options) do
          {:ok, opts} ->
            opts

          {:error, _} ->
            raise ArgumentError,
                  "Emily.Backend accepts only the :device and :dot_precision options, got: " <>
                    inspect(Keyword.keys(opts) -- Keyword.keys(@init_options))
        end

      device = [device: Emily.device!(opts[:device])]

      case opts[:dot_precision] do
        nil -> device
        p -> device ++ [dot_precision: Emily.validate_dot_precision!(p)]
      end
    end

    # The `precision:` option of this call's dot or conv: the process's
    # Emily.with_dot_precision/2 scope, else the default backend's
    # :dot_precision, else none (the engine uses the VM's setting).
    defp precision_opts do
      case Process.get(Emily.DotPrecision) do
        nil ->
          case Nx.default_backend() do
            {__MODULE__, opts} ->
              case Keyword.get(opts, :dot_precision) do
                nil -> []
                p -> [precision: p]
              end

            _ ->
              []
          end

        p ->
          [precision: p]
      end
    end

    defp device_opt(opts) do
      case Keyword.fetch(opts, :device) do
        {:ok, device} -> Emily.normalize_device(device)
        :error -> :cpu
      end
    end

    @doc """
    The device of an Emily tensor (`:cpu` for one that came from another
    node with its bytes).
    """
    def device(%T{data: %__MODULE__{ref: {:quantized, weight, _}}}), do: device(weight.packed)

    def device(%T{} = t) do
      case local!(t) do
        {:ref, ref} ->
          {_type, _shape, device} = Native.ok!(Native.tensor_info(ref))
          device

        {:bytes, _} ->
          :cpu
      end
    end

    # Where an Emily tensor's data is: its engine tensor ({:ref, ref}, a
    # resource of this VM, even deallocated), or for a tensor that came
    # from another node (or through binary_to_term after its tensor was
    # freed) the bytes its struct carries ({:bytes, binary}), or neither
    # ({:error, message}: a GPU tensor or a view, which carry no bytes).
    defp locate(%T{data: %__MODULE__{ref: {:graph, _}}}) do
      {:error,
       "the value of a tensor is needed while Emily.Compiler traces a defn (it has none " <>
         "until the compiled function runs)"}
    end

    defp locate(%T{data: %__MODULE__{ref: ref, bytes: bytes}}) do
      case Native.check_local(ref) do
        :ok -> {:ref, ref}
        {:error, _} when is_binary(bytes) -> {:bytes, bytes}
        {:error, message} -> {:error, message}
      end
    end

    defp local!(t) do
      case locate(t) do
        {:error, message} -> raise ArgumentError, message
        found -> found
      end
    end

    # the %Emily.Backend{} of a tensor reference made here
    defp data!(ref), do: by_value(Native.ok!(Native.backend_data(ref)))

    ## Quantized matrices (see the moduledoc)

    @doc false
    # The float matrix a quantized tensor stands for, as an Emily tensor
    # (or, while Emily.Compiler traces, a graph value): the engine's
    # dequantize of the stored weight, transposed where the tensor is its
    # transpose.
    def dequantized(%T{data: %__MODULE__{ref: {:quantized, w, transposed?}}} = t) do
      stored = %{t | shape: w.shape, names: [nil, nil], data: nil}
      opts = [bits: w.bits, group_size: w.group_size]
      m = call(:dequantize, stored, [w.packed, w.scales, w.biases, opts])

      if transposed?,
        do: call(:transpose, %{t | data: nil}, [m, [1, 0]]),
        else: %{m | names: t.names}
    end

    # Nx.dot of a quantized matrix `q` (the operand on side `side`, :left
    # or :right) contracting its axis `qc` with axis `xc` of the float `x`:
    # one quantized_matmul of x (its contracted axis moved last) by the
    # stored weight, transposed or not as the contracted axis is the
    # grouped one or the other; the result's axes are then put in Nx's
    # order (the left operand's free axes first).
    defp quantized_dot(out, side, q, qc, x, xc) do
      %T{data: %__MODULE__{ref: {:quantized, w, transposed?}}} = q
      # the axis of q that the groups run along
      grouped = if transposed?, do: 0, else: 1
      rank = tuple_size(x.shape)
      perm = Enum.to_list(0..(rank - 1)//1) |> List.delete(xc) |> Kernel.++([xc])

      x =
        if xc == rank - 1,
          do: x,
          else: call(:transpose, %{x | shape: permuted(x.shape, perm), data: nil}, [x, perm])

      free = elem(q.shape, 1 - qc)
      x_free = x.shape |> Tuple.delete_at(rank - 1)
      y_shape = Tuple.insert_at(x_free, rank - 1, free)
      y_out = %{out | shape: y_shape, names: List.duplicate(nil, rank)}
      opts = [bits: w.bits, group_size: w.group_size, transpose: qc == grouped]
      y = call(:quantized_matmul, y_out, [x, w.packed, w.scales, w.biases, opts])

      case side do
        _ when rank == 1 ->
          %{y | names: out.names}

        :right ->
          %{y | names: out.names}

        :left ->
          # q's free axis first, then x's
          back = [rank - 1 | Enum.to_list(0..(rank - 2)//1)]
          call(:transpose, out, [y, back])
      end
    end

    defp permuted(shape, perm), do: perm |> Enum.map(&elem(shape, &1)) |> List.to_tuple()

    ## The dispatch

    # Runs a callback on the engine and puts the result(s) into `out`.
    defp call(name, out, args, device \\ nil) do
      case Process.get(Emily.Compiler.Trace) do
        nil -> eval(name, out, args, device)
        # Emily.Compiler is tracing a defn: the call is recorded, not run
        trace -> wrap(Emily.Compiler.Trace.record(trace, name, out, args), out)
      end
    end

    defp eval(name, out, args, device) do
      meta = fn -> %{op: name, shapes: arg_shapes(args), types: arg_types(args)} end
      result = Emily.Telemetry.span(:eval, meta, fn -> run(name, out, args, device, true) end)
      if @detect_nan_inf, do: check_nan_inf(result, name, out)
      wrap(result, out)
    end

    # mode 0 (run) + 2: results as %Emily.Backend{} data
    @run_as_data 2

    defp run(name, out, args, device, retry?) do
      case Native.dispatch(name, out, args, device, Emily.Stream.current_ref(), @run_as_data) do
        {:error, :foreign_tensor} when retry? ->
          target = device || first_device(args) || :cpu
          run(name, out, import_foreign(args, target), device, false)

        {:error, :foreign_tensor} ->
          raise ArgumentError, "#{name}: cannot move a tensor of another backend to Emily"

        {:error, message} ->
          message = reference_message(name, message)
          raise reference_exception(message), message

        result ->
          result
      end
    end

    # Errors that Nx.BinaryBackend itself raises from inside a callback
    # are raised with its exact text, which Nx's doctests (and users'
    # rescue clauses) match; the engine's own message, which also says
    # where the zero pivot is, stays with the C API (emily_last_error).
    @singular "can't solve for singular matrix"
    defp reference_message(name, "triangular_solve: " <> @singular <> _)
         when name in [:triangular_solve, :solve],
         do: @singular

    defp reference_message(_name, message), do: message

    # Nx.BinaryBackend raises these from Erlang/Complex arithmetic, as
    # ArithmeticError (float remainder by zero, complex atan2 with an
    # imaginary part); every other engine error is an ArgumentError.
    @arithmetic_messages [
      "bad argument in arithmetic expression",
      "Complex.atan2 only accepts real numbers as arguments"
    ]
    defp reference_exception(message) when message in @arithmetic_messages, do: ArithmeticError
    defp reference_exception(_message), do: ArgumentError

    defp wrap(%__MODULE__{} = data, %T{} = out), do: %{out | data: by_value(data)}

    defp wrap(datas, out) when is_list(datas) and is_tuple(out) do
      out
      |> Tuple.to_list()
      |> Enum.zip(datas)
      |> Enum.map(fn {o, data} -> %{o | data: by_value(data)} end)
      |> List.to_tuple()
    end

    # config :emily, by_value: true (see the moduledoc): CPU results keep
    # their bytes (the zero-copy alias, or a copy of a view's elements) and
    # drop the reference, so that equal tensors are equal structs.
    if @by_value do
      defp by_value(%__MODULE__{bytes: bytes}) when is_binary(bytes),
        do: %__MODULE__{ref: nil, bytes: bytes}

      defp by_value(%__MODULE__{ref: ref} = data) do
        case Native.ok!(Native.tensor_info(ref)) do
          {_type, _shape, :cpu} -> %__MODULE__{ref: nil, bytes: Native.to_binary!(ref)}
          _ -> data
        end
      end
    else
      defp by_value(data), do: data
    end

    defp arg_shapes(args), do: for(%T{shape: shape} <- args, do: shape)
    defp arg_types(args), do: for(%T{type: type} <- args, do: type)

    defp first_device(args) do
      Enum.find_value(List.flatten(args), fn
        %T{data: %__MODULE__{}} = t -> device(t)
        _ -> nil
      end)
    end

    # Tensors of backends the NIF cannot read move to Emily first;
    # quantized matrices are dequantized (on their own device).
    defp import_foreign(%T{data: %__MODULE__{ref: {:quantized, _, _}}} = t, _device),
      do: dequantized(t)

    defp import_foreign(%T{data: %__MODULE__{}} = t, _device), do: t
    defp import_foreign(%T{data: %Nx.BinaryBackend{}} = t, _device), do: t

    defp import_foreign(%T{} = t, device),
      do: Nx.backend_copy(t, {__MODULE__, device: device})

    defp import_foreign(list, device) when is_list(list),
      do: Enum.map(list, &import_foreign(&1, device))

    defp import_foreign(tuple, device) when is_tuple(tuple),
      do: tuple |> Tuple.to_list() |> import_foreign(device) |> List.to_tuple()

    defp import_foreign(other, _device), do: other

    ## Creation

    @impl true
    def constant(out, number, opts), do: call(:constant, out, [number, []], device_opt(opts))
    @impl true
    def eye(out, opts), do: call(:eye, out, [[]], device_opt(opts))
    @impl true
    def iota(out, axis, opts), do: call(:iota, out, [axis, []], device_opt(opts))

    @impl true
    def from_binary(%T{type: type, shape: shape} = out, binary, opts) do
      binary = if is_list(binary), do: IO.iodata_to_binary(binary), else: binary
      ref = Native.from_binary!(device_opt(opts), type, shape, pad_to_bytes(binary))
      %{out | data: data!(ref)}
    end

    # Local pointers that Emily handed out (to_pointer/2) are read back as a
    # copy on the requested device; Emily reads no other memory, so a
    # foreign address is an error rather than a segmentation fault.
    @impl {:from_pointer, 5} in @callbacks
    def from_pointer(%{kind: :local, address: address}, type, shape, backend_opts, opts) do
      device = device_opt(backend_opts)
      ref = Native.ok!(Native.from_pointer(device, address, type, shape))
      %T{type: type, shape: shape, names: names(opts, shape), data: data!(ref)}
    end

    def from_pointer(pointer, _type, _shape, _backend_opts, _opts) do
      raise ArgumentError,
            "Emily.Backend reads only :local pointers from Emily's to_pointer/2, got: " <>
              inspect(pointer)
    end

    defp names(opts, shape) do
      case Keyword.get(opts, :names) do
        nil -> List.duplicate(nil, tuple_size(shape))
        names -> names
      end
    end

    @impl {:to_pointer, 2} in @callbacks
    def to_pointer(%T{data: %__MODULE__{ref: {:quantized, _, _}}}, _opts) do
      raise ArgumentError,
            "to_pointer: a quantized tensor has no buffer of its values; take the pointer of " <>
              "Emily.Quantization.dequantize_tensor(t)"
    end

    def to_pointer(%T{} = t, opts) do
      case Keyword.get(opts, :mode, :local) do
        :local ->
          ref =
            case local!(t) do
              {:ref, ref} ->
                ref

              {:bytes, _} ->
                raise ArgumentError,
                      "to_pointer: this tensor came from another node and has no engine " <>
                        "tensor here; make it local first with Nx.backend_copy(t, Emily.Backend)"
            end

          {address, size} = Native.ok!(Native.to_pointer(ref))
          pointer(address, size)

        mode ->
          raise ArgumentError,
                "Emily.Backend supports only mode: :local pointers, got: #{inspect(mode)}"
      end
    end

    if Code.ensure_loaded?(Nx.Pointer) do
      defp pointer(address, size),
        do: %Nx.Pointer{kind: :local, address: address, data_size: size}
    else
      defp pointer(address, size), do: %{kind: :local, address: address, data_size: size}
    end

    ## Reading, moving, inspecting

    @impl true
    def to_binary(%T{data: %__MODULE__{ref: {:quantized, _, _}}} = t, limit),
      do: to_binary(dequantized(t), limit)

    def to_binary(%T{data: %__MODULE__{ref: ref}} = t, limit) do
      meta = fn -> %{op: :to_binary, shapes: [t.shape], types: [t.type]} end

      Emily.Telemetry.span(:to_binary, meta, fn ->
        case Native.to_binary(ref, limit) do
          {:error, message} ->
            # not a tensor of this VM: the bytes it carried (see locate/1)
            case local!(t) do
              {:bytes, bytes} -> bytes_prefix(bytes, t.type, limit)
              {:ref, _} -> raise ArgumentError, message
            end

          binary ->
            sub_byte_bits(binary, t.type, limit || Nx.size(t.shape))
        end
      end)
    end

    defp bytes_prefix(bytes, type, nil), do: sub_byte_bits(bytes, type, nil)

    defp bytes_prefix(bytes, {_, bits} = type, limit),
      do:
        binary_part(bytes, 0, min(byte_size(bytes), div(limit * bits + 7, 8)))
        |> sub_byte_bits(type, limit)

    # s2, s4, u2 and u4 come from the engine packed as Nx's bitstrings, the
    # last byte padded with zero bits: the bitstring is its first
    # count * bits bits (all of them for count nil).
    defp sub_byte_bits(bytes, {_, bits}, count) when bits < 8 do
      count = count || div(bit_size(bytes), bits)
      <<value::bitstring-size(count * bits), _::bitstring>> = bytes
      value
    end

    defp sub_byte_bits(bytes, _type, _count), do: bytes

    # Nx's sub-byte binaries are bitstrings; the engine reads whole bytes.
    defp pad_to_bytes(bits) when is_binary(bits), do: bits

    defp pad_to_bytes(bits) when is_bitstring(bits),
      do: <<bits::bitstring, 0::size(8 - rem(bit_size(bits), 8))>>

    @impl true
    def backend_deallocate(%T{data: %__MODULE__{ref: {:quantized, w, _}}}) do
      results = Enum.map([w.packed, w.scales, w.biases], &backend_deallocate/1)
      if Enum.all?(results, &(&1 == :already_deallocated)), do: :already_deallocated, else: :ok
    end

    def backend_deallocate(%T{data: %__MODULE__{ref: ref}} = t) do
      case Native.deallocate(ref) do
        :ok ->
          :ok

        :already_deallocated ->
          :already_deallocated

        {:error, message} ->
          # a tensor from another node: nothing of it here but its bytes,
          # which go with the struct
          case local!(t) do
            {:bytes, _} -> :ok
            {:ref, _} -> raise ArgumentError, message
          end
      end
    end

    @impl true
    def backend_copy(%T{} = tensor, Nx.Tensor, _opts), do: tensor

    # a quantized tensor stays quantized on Emily (its parts move); other
    # backends get its dequantized values (to_binary/2)
    def backend_copy(%T{data: %__MODULE__{ref: {:quantized, _, _}}} = q, __MODULE__, opts),
      do: map_parts(q, &backend_copy(&1, __MODULE__, opts))

    def backend_copy(%T{} = tensor, __MODULE__, opts) do
      %{tensor | data: data!(copy_to(tensor, device_opt(opts)))}
    end

    def backend_copy(%T{} = tensor, backend, opts) do
      backend.from_binary(tensor, to_binary(tensor, Nx.size(tensor)), opts)
    end

    @impl true
    def backend_transfer(%T{} = tensor, Nx.Tensor, _opts), do: tensor

    def backend_transfer(%T{data: %__MODULE__{ref: {:quantized, _, _}}} = q, __MODULE__, opts),
      do: map_parts(q, &backend_transfer(&1, __MODULE__, opts))

    def backend_transfer(%T{} = tensor, __MODULE__, opts) do
      target = device_opt(opts)

      case local!(tensor) do
        {:ref, ref} ->
          {_type, _shape, device} = Native.ok!(Native.tensor_info(ref))

          if device == target do
            tensor
          else
            copy = %{tensor | data: data!(Native.ok!(Native.to_device(ref, target)))}
            Native.deallocate(ref)
            copy
          end

        {:bytes, _} ->
          # a tensor from another node becomes a local one
          %{tensor | data: data!(copy_to(tensor, target))}
      end
    end

    def backend_transfer(%T{} = tensor, backend, opts) do
      copy = backend_copy(tensor, backend, opts)
      backend_deallocate(tensor)
      copy
    end

    defp map_parts(%T{data: %__MODULE__{ref: {:quantized, w, transposed?}}} = q, fun) do
      w = %{w | packed: fun.(w.packed), scales: fun.(w.scales), biases: fun.(w.biases)}
      %{q | data: %__MODULE__{ref: {:quantized, w, transposed?}}}
    end

    # a new engine tensor on `device` with the tensor's values
    defp copy_to(%T{type: type, shape: shape} = tensor, device) do
      case local!(tensor) do
        {:ref, ref} -> Native.ok!(Native.to_device(ref, device))
        {:bytes, bytes} -> Native.from_binary!(device, type, shape, bytes)
      end
    end

    @impl true
    def inspect(%T{data: %__MODULE__{ref: {:quantized, w, transposed?}}} = q, inspect_opts) do
      axis = if transposed?, do: 0, else: 1
      about = "quantized: #{w.bits} bits, groups of #{w.group_size} along axis #{axis}"
      inspect_values(q, inspect_opts, [about, Inspect.Algebra.line()])
    end

    def inspect(%T{} = tensor, inspect_opts) do
      case locate(tensor) do
        {:error, _} ->
          # a tensor that came from another node without its bytes: what
          # it is, rather than a raise inside inspect (crash reports)
          Inspect.Algebra.concat([
            "Emily.Backend<not on this node>",
            Inspect.Algebra.line(),
            "(its bytes were not carried: a GPU tensor or a non-contiguous view)"
          ])

        _ ->
          inspect_values(tensor, inspect_opts)
      end
    end

    # (`about`: lines to print above the values)
    defp inspect_values(tensor, inspect_opts, about \\ []) do
      limit = if inspect_opts.limit == :infinity, do: Nx.size(tensor), else: inspect_opts.limit + 1
      binary = to_binary(tensor, min(limit, Nx.size(tensor)))
      doc = Nx.Backend.inspect(tensor, binary, inspect_opts)

      Inspect.Algebra.concat(about ++ [doc])
      |> maybe_add_signature(tensor)
    end

    if @add_signature do
      defp maybe_add_signature(doc, tensor) do
        device =
          case device(tensor) do
            :cpu -> "cpu"
            {:cuda, i} -> "cuda:#{i}"
          end

        Inspect.Algebra.concat(["Emily.Backend<#{device}>", Inspect.Algebra.line(), doc])
      end
    else
      defp maybe_add_signature(doc, _tensor), do: doc
    end

    @impl true
    def to_batched(%T{shape: out_shape} = out, %T{shape: shape} = tensor, opts) do
      batch = elem(out_shape, 0)
      total = elem(shape, 0)
      full = div(total, batch)
      left = rem(total, batch)
      rank = tuple_size(shape)
      zeros = List.duplicate(0, rank - 1)
      rest = shape |> Tuple.delete_at(0) |> Tuple.to_list()
      ones = List.duplicate(1, rank)
      last = if left != 0 and opts[:leftover] == :repeat, do: full, else: full - 1

      slice = fn start, length ->
        call(:slice, %{out | shape: put_elem(out_shape, 0, length)}, [
          tensor,
          [start | zeros],
          [length | rest],
          ones
        ])
      end

      Stream.map(0..last//1, fn
        ^full ->
          # the leftover, completed with the first rows
          call(:concatenate, out, [[slice.(full * batch, left), slice.(0, batch - left)], 0])

        i ->
          slice.(i * batch, batch)
      end)
    end

    ## Shape and type

    @impl true
    def as_type(out, t), do: call(:as_type, out, [t])
    @impl true
    def bitcast(out, t), do: call(:bitcast, out, [t])
    @impl true
    def reshape(out, t), do: call(:reshape, out, [t])
    @impl true
    def squeeze(out, t, axes), do: call(:squeeze, out, [t, axes])
    @impl true
    def broadcast(out, t, shape, axes), do: call(:broadcast, out, [t, shape, axes])
    @impl true
    def transpose(out, t, axes), do: call(:transpose, out, [t, axes])
    @impl true
    def pad(out, t, value, config), do: call(:pad, out, [t, value, config])
    @impl true
    def reverse(out, t, axes), do: call(:reverse, out, [t, axes])

    @impl true
    def dot(out, a, [ac], [], %T{data: %__MODULE__{ref: {:quantized, _, _}}} = b, [bc], []) do
      if float?(a.type) and not quantized?(a),
        do: quantized_dot(out, :right, b, bc, a, ac),
        else: plain_dot(out, a, [ac], [], b, [bc], [])
    end

    def dot(out, %T{data: %__MODULE__{ref: {:quantized, _, _}}} = a, [ac], [], b, [bc], []) do
      if float?(b.type) and not quantized?(b),
        do: quantized_dot(out, :left, a, ac, b, bc),
        else: plain_dot(out, a, [ac], [], b, [bc], [])
    end

    def dot(out, a, ca, ba, b, cb, bb), do: plain_dot(out, a, ca, ba, b, cb, bb)

    defp quantized?(%T{data: %__MODULE__{ref: {:quantized, _, _}}}), do: true
    defp quantized?(_), do: false

    # (a quantized operand is dequantized by run/5's retry)
    defp plain_dot(out, a, ca, ba, b, cb, bb) do
      case precision_opts() do
        [] -> call(:dot, out, [a, ca, ba, b, cb, bb])
        p -> call(:dot, out, [a, ca, ba, b, cb, bb, p])
      end
    end

    @impl true
    def clip(out, t, min, max), do: call(:clip, out, [t, min, max])
    @impl true
    def slice(out, t, start, lengths, strides), do: call(:slice, out, [t, start, lengths, strides])
    @impl true
    def put_slice(out, t, start, slice), do: call(:put_slice, out, [t, start, slice])
    @impl true
    def concatenate(out, tensors, axis), do: call(:concatenate, out, [tensors, axis])
    @impl {:stack, 3} in @callbacks
    def stack(out, tensors, axis), do: call(:stack, out, [tensors, axis])
    @impl true
    def select(out, pred, on_true, on_false), do: call(:select, out, [pred, on_true, on_false])

    @impl true
    def conv(out, t, kernel, opts), do: call(:conv, out, [t, kernel, opts ++ precision_opts()])

    ## Indexing

    @impl true
    def gather(out, t, indices, opts) do
      if @bounds_check, do: check_bounds(:gather, t, indices, gather_axes(indices, opts))
      call(:gather, out, [t, indices, opts])
    end

    @impl true
    def indexed_add(out, t, indices, updates, opts) do
      if @bounds_check, do: check_bounds(:indexed_add, t, indices, gather_axes(indices, opts))
      call(:indexed_add, out, [t, indices, updates, opts])
    end

    @impl true
    def indexed_put(out, t, indices, updates, opts) do
      if @bounds_check, do: check_bounds(:indexed_put, t, indices, gather_axes(indices, opts))
      call(:indexed_put, out, [t, indices, updates, opts])
    end

    # Nx 0.7 passes the axis as an integer, Nx 0.13 (through block/4) as opts.
    @impl {:take, 4} in @callbacks
    def take(out, t, indices, axis) when is_integer(axis), do: take(out, t, indices, axis: axis)

    def take(out, t, indices, opts) do
      if @bounds_check, do: check_bounds(:take, t, indices, {:all, Keyword.fetch!(opts, :axis)})
      call(:take, out, [t, indices, opts])
    end

    @impl {:take_along_axis, 4} in @callbacks
    def take_along_axis(out, t, indices, axis) when is_integer(axis),
      do: take_along_axis(out, t, indices, axis: axis)

    def take_along_axis(out, t, indices, opts) do
      if @bounds_check,
        do: check_bounds(:take_along_axis, t, indices, {:all, Keyword.fetch!(opts, :axis)})

      call(:take_along_axis, out, [t, indices, opts])
    end

    ## Reductions, windows, sorting

    for op <- [:all, :any, :sum, :product, :reduce_max, :reduce_min, :argmax, :argmin] do
      @impl {op, 3} in @callbacks
      def unquote(op)(out, t, opts), do: call(unquote(op), out, [t, opts])
    end

    for op <- [:window_sum, :window_product, :window_max, :window_min] do
      @impl true
      def unquote(op)(out, t, shape, opts), do: call(unquote(op), out, [t, shape, opts])
    end

    for op <- [:window_scatter_max, :window_scatter_min] do
      @impl true
      def unquote(op)(out, t, source, init, shape, opts),
        do: call(unquote(op), out, [t, source, init, shape, opts])
    end

    @impl true
    def sort(out, t, opts), do: call(:sort, out, [t, opts])
    @impl true
    def argsort(out, t, opts), do: call(:argsort, out, [t, opts])
    @impl {:top_k, 3} in @callbacks
    def top_k(out, t, opts), do: call(:top_k, out, [t, opts])

    for op <- [:cumulative_sum, :cumulative_product, :cumulative_min, :cumulative_max] do
      @impl {op, 3} in @callbacks
      def unquote(op)(out, t, opts), do: call(unquote(op), out, [t, opts])
    end

    @impl {:all_close, 4} in @callbacks
    def all_close(out, a, b, opts), do: call(:all_close, out, [a, b, opts])

    ## Linear algebra and transforms

    @impl true
    def triangular_solve(out, a, b, opts),
      do: call(:triangular_solve, out, [a, b, with_linalg_method(opts)])

    # `linalg: :reference` means the loaded Nx's own algorithms. Nx 0.7
    # computed lu and eigh in Nx.BinaryBackend.Matrix (svd, determinant
    # and a qr-based solve on top) and qr with explicit reflection
    # matrices; later Nx replaced them (Nx.LinAlg.LU, Nx.LinAlg.BlockEigh,
    # rank-1 QR updates). The engine has both generations.
    @reference if Code.ensure_loaded?(Nx.LinAlg.BlockEigh), do: :reference, else: :reference_nx07

    @impl {:lu, 3} in @callbacks
    def lu(out, t, opts), do: call(:lu, out, [t, with_linalg_method(opts)])
    @impl {:qr, 3} in @callbacks
    def qr(out, t, opts), do: call(:qr, out, [t, with_linalg_method(opts)])
    @impl {:svd, 3} in @callbacks
    def svd(out, t, opts), do: call(:svd, out, [t, with_linalg_method(opts)])
    @impl {:eigh, 3} in @callbacks
    def eigh(out, t, opts), do: call(:eigh, out, [t, with_linalg_method(opts)])
    @impl {:cholesky, 2} in @callbacks
    def cholesky(out, t), do: call(:cholesky, out, [t])
    @impl {:solve, 3} in @callbacks
    def solve(out, a, b), do: call(:solve, out, [a, b, with_linalg_method([])])

    @impl {:determinant, 2} in @callbacks
    def determinant(out, t),
      do: call(:determinant, out, [t, with_linalg_method([])])

    # the method of config :emily, linalg: (read at each call)
    defp with_linalg_method(opts) do
      method =
        case Application.get_env(:emily, :linalg, :lapack) do
          :lapack ->
            :lapack

          :reference ->
            @reference

          other ->
            raise ArgumentError,
                  "invalid :linalg received. Expected one of [:lapack, :reference], " <>
                    "received: #{inspect(other)}"
        end

      Keyword.put(opts, :linalg, method)
    end

    for op <- [:fft, :ifft, :fft2, :ifft2, :rfft, :irfft] do
      @impl {op, 3} in @callbacks
      def unquote(op)(out, t, opts), do: call(unquote(op), out, [t, opts])
    end

    ## Element-wise

    binary_ops =
      [:add, :subtract, :multiply, :pow, :remainder, :divide, :atan2, :min, :max, :quotient] ++
        [:bitwise_and, :bitwise_or, :bitwise_xor, :left_shift, :right_shift] ++
        [:equal, :not_equal, :greater, :less, :greater_equal, :less_equal] ++
        [:logical_and, :logical_or, :logical_xor]

    for op <- binary_ops do
      @impl true
      def unquote(op)(out, a, b), do: call(unquote(op), out, [a, b])
    end

    unary_ops =
      Enum.map(Nx.Shared.unary_math_funs(), &elem(&1, 0)) ++
        [:abs, :bitwise_not, :ceil, :conjugate, :floor, :negate, :round, :sign] ++
        [:count_leading_zeros, :population_count, :real, :imag, :is_nan, :is_infinity] ++
        [:logical_not, :phase]

    for op <- Enum.uniq(unary_ops) do
      @impl {op, 2} in @callbacks
      def unquote(op)(out, t), do: call(unquote(op), out, [t])
    end

    ## Nx 0.12+: former optional callbacks arrive as Nx.Block structs

    @blocks %{
      Nx.Block.LogicalNot => :logical_not,
      Nx.Block.Phase => :phase,
      Nx.Block.LinAlg.Cholesky => :cholesky,
      Nx.Block.LinAlg.Solve => :solve,
      Nx.Block.LinAlg.QR => :qr,
      Nx.Block.LinAlg.Eigh => :eigh,
      Nx.Block.LinAlg.SVD => :svd,
      Nx.Block.LinAlg.LU => :lu,
      Nx.Block.LinAlg.Determinant => :determinant,
      Nx.Block.AllClose => :all_close,
      Nx.Block.CumulativeSum => :cumulative_sum,
      Nx.Block.CumulativeProduct => :cumulative_product,
      Nx.Block.CumulativeMin => :cumulative_min,
      Nx.Block.CumulativeMax => :cumulative_max,
      Nx.Block.Take => :take,
      Nx.Block.TakeAlongAxis => :take_along_axis,
      Nx.Block.TopK => :top_k,
      Nx.Block.FFT2 => :fft2,
      Nx.Block.IFFT2 => :ifft2,
      Nx.Block.RFFT => :rfft,
      Nx.Block.IRFFT => :irfft,
      # Emily's own blocks (Emily.Fast): the engine's fused kernels
      Emily.Fast.LayerNorm => :layer_norm,
      Emily.Fast.RMSNorm => :rms_norm,
      Emily.Fast.SDPA => :sdpa,
      Emily.Fast.Rope => :rope,
      # Emily.Quantization: the engine's quantization kernels
      Emily.Quantization.Quantize => :quantize,
      Emily.Quantization.Dequantize => :dequantize,
      Emily.Quantization.Matmul => :quantized_matmul
    }

    @doc false
    def block_callbacks, do: @blocks

    @linalg_blocks [:cholesky, :solve, :qr, :eigh, :svd, :lu, :determinant]

    @impl {:block, 4} in @callbacks
    def block(%module{} = struct, out, args, fun) do
      if Map.get(@blocks, module) in @linalg_blocks and nx_algorithm_on_device?(args) do
        # `linalg: :reference` off the CPU: the engine's ports of Nx's
        # algorithms run on the CPU only, so Nx's own algorithm (the
        # block's function) runs, op by op, on the tensors' device, its
        # dots at HIGHEST as the ports run theirs (Nx's bits)
        Emily.with_dot_precision(:highest, fn -> apply(fun, [struct | args]) end)
      else
        known_block(struct, out, args, fun)
      end
    end

    defp nx_algorithm_on_device?(args) do
      Application.get_env(:emily, :linalg, :lapack) == :reference and block_device(args) != :cpu
    end

    # The device of a block's first Emily tensor; while Emily.Compiler
    # traces, the device it compiles for (the default backend's then).
    defp block_device(args) do
      case Enum.find(args, &match?(%T{data: %__MODULE__{}}, &1)) do
        %T{data: %__MODULE__{ref: {:graph, _}}} ->
          case Nx.default_backend() do
            {__MODULE__, opts} -> opts |> Keyword.get(:device, :cpu) |> Emily.normalize_device()
            _ -> :cpu
          end

        %T{} = t ->
          device(t)

        nil ->
          :cpu
      end
    end

    defp known_block(%module{} = struct, out, args, fun) do
      case @blocks do
        %{^module => :take} ->
          [t, indices] = args
          take(out, t, indices, axis: struct.axis)

        %{^module => :take_along_axis} ->
          [t, indices] = args
          take_along_axis(out, t, indices, axis: struct.axis)

        %{^module => name} when name in [:qr, :eigh, :svd] ->
          [t] = args
          opts = struct |> Map.from_struct() |> Map.to_list()
          apply(__MODULE__, name, [out, t, opts])

        %{^module => name} ->
          opts = struct |> Map.from_struct() |> Map.to_list()
          call(name, out, if(opts == [], do: args, else: args ++ [opts]))

        %{} ->
          # a block this version of Emily does not know: Nx's own
          # implementation, made of other callbacks
          apply(fun, [struct | args])
      end
    end

    ## Callbacks that take Elixir functions: through Nx.BinaryBackend

    @impl true
    def reduce(out, t, acc, opts, fun), do: fallback(:reduce, out, [t, acc, opts, fun])

    @impl true
    def window_reduce(out, t, acc, shape, opts, fun),
      do: fallback(:window_reduce, out, [t, acc, shape, opts, fun])

    # Nx 0.7
    @impl {:map, 4} in @callbacks
    def map(out, t, opts, fun), do: fallback(:map, out, [t, opts, fun])

    defp fallback(op, out, args) do
      meta = fn -> %{op: op, shapes: arg_shapes(args), types: arg_types(args)} end

      case Application.get_env(:emily, :fallback, :silent) do
        :raise ->
          raise ArgumentError,
                "Emily.Backend: #{op} takes an Elixir function and would run on Nx.BinaryBackend " <>
                  "(config :emily, fallback: :raise)"

        :warn ->
          Logger.warning(
            "Emily.Backend: #{op} runs on Nx.BinaryBackend (it takes an Elixir function)"
          )

        _ ->
          :ok
      end

      device = first_device(args) || :cpu

      Emily.Telemetry.span(:fallback, meta, fn ->
        binary_args =
          Enum.map(args, fn
            %T{} = t -> Nx.backend_copy(t, Nx.BinaryBackend)
            other -> other
          end)

        result =
          Nx.with_default_backend(Nx.BinaryBackend, fn ->
            apply(Nx.BinaryBackend, op, [out | binary_args])
          end)

        Nx.backend_transfer(result, {__MODULE__, device: device})
      end)
    end

    ## Debug checks (compiled only when enabled)

    defp gather_axes(%T{shape: ishape}, opts) do
      case opts[:axes] do
        nil -> Enum.to_list(0..(elem(ishape, tuple_size(ishape) - 1) - 1)//1)
        axes -> axes
      end
    end

    # {:all, axis}: every index addresses `axis`; a list of axes: the last
    # dimension of the indices walks them.
    defp check_bounds(op, %T{shape: shape}, %T{} = indices, {:all, axis}) do
      axis = if axis < 0, do: axis + tuple_size(shape), else: axis
      check_range(op, Nx.to_flat_list(indices), elem(shape, axis), axis)
    end

    defp check_bounds(op, %T{shape: shape}, %T{shape: ishape} = indices, axes) do
      n = elem(ishape, tuple_size(ishape) - 1)

      if n > 0 and Nx.size(indices) > 0 do
        indices
        |> Nx.reshape({:auto, n})
        |> Nx.transpose()
        |> Nx.to_list()
        |> Enum.zip(axes)
        |> Enum.each(fn {column, axis} -> check_range(op, column, elem(shape, axis), axis) end)
      end

      :ok
    end

    defp check_range(op, values, size, axis) do
      case Enum.find(values, &(&1 < 0 or &1 >= size)) do
        nil ->
          :ok

        bad ->
          raise ArgumentError,
                "#{op}: index #{bad} is out of bounds for axis #{axis} of size #{size} " <>
                  "(config :emily, debug_bounds_check: true)"
      end
    end

    @creation [:constant, :iota, :eye]

    defp check_nan_inf(_result, name, _out) when name in @creation, do: :ok

    defp check_nan_inf(result, name, out) do
      outs = if is_tuple(out), do: Tuple.to_list(out), else: [out]

      Enum.zip(outs, List.wrap(result))
      |> Enum.each(fn {%T{type: {kind, _}} = o, data} ->
        if kind in [:f, :bf, :c] do
          t = %{o | data: data}
          bad = Nx.logical_or(Nx.is_nan(t), Nx.is_infinity(t)) |> Nx.any() |> Nx.to_number()

          if bad == 1 do
            raise ArgumentError,
                  "#{name}: produced NaN or infinity (config :emily, debug_detect_nan_inf: true)"
          end
        end
      end)
    end
  end
end
