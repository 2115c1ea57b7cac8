defmodule Emily.Native do
  @moduledoc """
  The NIF over libemily (`c_src/`): term decoding into the engine's
  Nx.Backend callback dispatcher, tensor resources, devices and streams.

  Tensors are resources (references) freed when the BEAM collects them.
  Functions return `{:error, message}` on failure; the `!` helpers raise
  `ArgumentError` with the engine's message.

  `dispatch/6` takes exactly what an `Nx.Backend` callback receives: the
  callback name, the output template (an `%Nx.Tensor{}` or any map with
  `:type` and `:shape`, or a tuple of them) and the remaining arguments,
  where tensors are `%Nx.Tensor{}` structs over `%Emily.Backend{}` or
  `%Nx.BinaryBackend{}` data, or bare tensor references.
  """

  @on_load :load_nif

  @doc false
  def load_nif do
    path = :filename.join(:code.priv_dir(:emily), ~c"libemily_nif")

    case :erlang.load_nif(path, 0) do
      :ok ->
        :ok

      {:error, {reason, text}} ->
        IO.warn("Emily: cannot load its NIF (#{reason}): #{text}")
        :ok
    end
  end

  defp nif!, do: :erlang.nif_error(:emily_nif_not_loaded)

  @doc """
  Runs a callback. `device` is where creation callbacks create (`nil`:
  the first tensor argument's device, or `:cpu`); `stream` is an
  `Emily.Stream` reference or `nil`; `mode` is 0 (run: the template is
  authoritative) or 1 (infer: the engine infers output types and shapes),
  plus 2 to get each result as `%Emily.Backend{}` data (see
  `backend_data/1`) rather than a bare reference.
  Returns a tensor reference, a list of them for multi-output callbacks,
  `{:error, message}`, or `{:error, :foreign_tensor}` when an argument is
  a tensor of a backend other than Emily or Nx.BinaryBackend.

  An `%Emily.Backend{}` argument whose reference is not a tensor of this
  VM (it came from another node, or through `:erlang.binary_to_term/1`
  after its tensor was freed) is read from its `:bytes`, like an
  `Nx.BinaryBackend` tensor; without bytes it is an error that says why.
  """
  def dispatch(_callback, _out, _args, _device, _stream, _mode), do: nif!()

  @doc "Sets the element count up to which cheap callbacks run inline; returns the old one."
  def set_inline_limit(_elements), do: nif!()

  @doc "A tensor on `device` from row-major little-endian bytes."
  def from_binary(_device, _type, _shape, _binary), do: nif!()

  @doc "The first `limit` elements (`nil`: all) as a binary; zero-copy for contiguous host tensors."
  def to_binary(_ref, _limit), do: nif!()

  @doc "Frees the tensor now: `:ok` or `:already_deallocated`."
  def deallocate(_ref), do: nif!()

  @doc """
  `%Emily.Backend{ref: ref, bytes: bytes}`: `bytes` is a binary over the
  tensor's bytes (no copy; it keeps them alive) when they are contiguous
  in CPU memory, and `nil` otherwise (a GPU tensor, a non-contiguous view).
  The bytes travel with the struct to other nodes.
  """
  def backend_data(_ref), do: nif!()

  @doc """
  `:ok` when `ref` is a tensor of this VM (even deallocated); otherwise
  `{:error, message}`, the message for a tensor from another node that
  carries no bytes.
  """
  def check_local(_ref), do: nif!()

  @doc "`{type, shape, device}` of the engine tensor."
  def tensor_info(_ref), do: nif!()

  @doc "A copy of the tensor on another device."
  def to_device(_ref, _device), do: nif!()

  @doc """
  `{address, bytes}` of a contiguous host tensor (valid while it lives); the
  address is registered for `from_pointer/4`.
  """
  def to_pointer(_ref), do: nif!()

  @doc """
  A copy, on `device`, of the bytes at `address`, which must have come from
  `to_pointer/1` of a tensor that still lives (Emily reads no other memory).
  """
  def from_pointer(_device, _address, _type, _shape), do: nif!()

  @doc "Devices present: `:cpu` and `{:cuda, i}` for each usable GPU."
  def devices, do: nif!()

  @doc "`:ok` if the device exists and its engine is usable."
  def device_check(_device), do: nif!()

  @doc "The engine's version."
  def version, do: nif!()

  @doc "The Nx.Backend callbacks the engine's dispatcher implements."
  def callbacks, do: nif!()

  @doc "`{live tensor handles, live buffers}` in the engine (for leak tests)."
  def live_tensors, do: nif!()

  @doc "Waits for all work queued on a device."
  def synchronize(_device), do: nif!()

  @doc "`%{active:, peak:, cached:}` bytes of a device's caching allocator."
  def memory_stats(_device), do: nif!()

  @doc "Frees a device allocator's cached blocks and resets its peak."
  def release_cache(_device), do: nif!()

  @doc "The engine's dot precision, `:highest` or `:fast`."
  def dot_precision, do: nif!()

  @doc "Sets the engine's (process-wide) dot precision: `:ok` or `{:error, msg}`."
  def set_dot_precision(_precision), do: nif!()

  @doc "A new stream on a device (freed, after its work, when collected)."
  def stream_new(_device), do: nif!()

  @doc "Waits for a stream's work."
  def stream_synchronize(_stream), do: nif!()

  @doc "The device of a stream."
  def stream_device(_stream), do: nif!()

  ## Engine graphs (emily/graph.h), for Emily.Compiler

  @doc "A new engine graph: `{:ok, graph}`."
  def graph_new, do: nif!()

  @doc "Adds a parameter of a type and shape: `{:ok, value_id}`."
  def graph_param(_graph, _type, _shape), do: nif!()

  @doc """
  Records a callback call (the arguments `dispatch/6` takes; tensors whose
  data is `%Emily.Backend{ref: {:graph, id}}` name graph values):
  `{:ok, first_output_id}`, `{:error, :foreign_tensor}` or `{:error, msg}`.
  """
  def graph_call(_graph, _callback, _out, _args), do: nif!()

  @doc "Adds a tensor as a constant: `{:ok, value_id}`."
  def graph_const(_graph, _tensor), do: nif!()

  @doc """
  Adds a while loop over the state values `ids` with a condition and a
  body graph (which the graph takes): `{:ok, first_output_id}`.
  """
  def graph_while(_graph, _cond, _body, _ids), do: nif!()

  @doc """
  Adds a conditional: the first non-zero of the predicate values picks
  its branch graph, else the last; `counts` says how many of `captured`
  (value ids) each branch takes as parameters: `{:ok, first_output_id}`.
  """
  def graph_cond(_graph, _preds, _branches, _counts, _captured), do: nif!()

  @doc "Sets the graph's outputs (value ids)."
  def graph_outputs(_graph, _ids), do: nif!()

  @doc "Compiles (and optimizes unless `optimize?` is false) for a device."
  def graph_compile(_graph, _device, _optimize?, _patterns?), do: nif!()

  @doc "Runs a compiled graph: `{:ok, [%Emily.Backend{}]}` or `{:error, msg}`."
  def graph_run(_graph, _params), do: nif!()

  @doc "Saves a graph to a file (read by `emily_graph_load` and `build/emily_run`)."
  def graph_save(_graph, _path), do: nif!()

  @doc "What compiling did: params, calls, folded, dropped, fused calls, steps, peak bytes."
  def graph_stats(_graph), do: nif!()

  @doc """
  A GGUF file's metadata and tensors (`include/emily/gguf.h`):
  `{:ok, [{key, value}], [{name, {:dense, data}} | {name, {:quant, q, scales,
  biases, bits, group_size}}]}` with `%Emily.Backend{}` data, or `{:error,
  message}`. `only` is nil (every tensor) or a list of names.
  `Emily.Quantization.load_gguf/2` wraps it.
  """
  def gguf_load(_path, _scale_type, _only, _device), do: nif!()

  # Present only in a NIF built by `mix test` (c_src/test_hooks.c): the C
  # conformance runner's property checks for decompositions, and a count
  # of to_pointer's export-table entries.
  @doc false
  def test_property_checked_op(_op, _off_cpu), do: nif!()
  @doc false
  def test_property_check(_op, _args, _results, _case_json), do: nif!()
  @doc false
  def test_property_description(_op), do: nif!()
  # to_pointer's export-table entries owned by a tensor reference (nil: all)
  @doc false
  def test_export_count(_ref), do: nif!()

  ## Raising helpers

  @doc "Like `dispatch/6` in run mode; raises `ArgumentError` on errors."
  def dispatch!(callback, out, args, device \\ nil, stream \\ nil) do
    case dispatch(callback, out, args, device, stream, 0) do
      {:error, message} when is_binary(message) -> raise ArgumentError, message
      {:error, :foreign_tensor} -> raise ArgumentError, "#{callback}: a tensor of another backend"
      result -> result
    end
  end

  @doc "Like `from_binary/4`; raises on errors."
  def from_binary!(device, type, shape, binary) do
    ok!(from_binary(device, type, shape, binary))
  end

  @doc "Like `to_binary/2`; raises on errors."
  def to_binary!(ref, limit \\ nil), do: ok!(to_binary(ref, limit))

  @doc false
  def ok!({:error, message}) when is_binary(message), do: raise(ArgumentError, message)
  def ok!(result), do: result
end
