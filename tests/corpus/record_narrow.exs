# Records the narrow-type corpus (tests/corpus/narrow.jsonl.gz): the
# callbacks Nx 0.13.1 makes for the six types Nx added after 0.7 (f8,
# f8_e4m3fn, s2, s4, u2, u4) and what Nx.BinaryBackend answers, in the
# format of tests/corpus/README.md. Run it where Nx 0.13.1 and Jason load,
# for example from the models project that bench/models/setup makes:
#
#   cd /work/deps/models_app && mix run --no-compile \
#     /path/to/emily/tests/corpus/record_narrow.exs /path/to/emily/tests/corpus/narrow.jsonl
#   gzip -n -9 /path/to/emily/tests/corpus/narrow.jsonl
#
# A backend (NarrowRecorder.Backend) hands every callback to
# Nx.BinaryBackend and writes down the ones whose tensors or templates
# have a narrow type. Cases where Nx.BinaryBackend raises are not kept.
# Inputs of type f8 leave out its six subnormal bytes (0x01-0x03,
# 0x81-0x83): Nx.BinaryBackend decodes them as normal numbers, a bug that
# Emily does not share (docs/semantics.md, "Narrow types"); zeros of the
# 8-bit floats lose their sign in Nx on OTP < 27 (zero_sign_lost?/1).

defmodule NarrowRecorder.Backend do
  @behaviour Nx.Backend
  defstruct [:state]

  # not callbacks a backend answers with a computed tensor, or not
  # recorded (as in the other corpus files)
  @passthrough [:init, :from_binary, :to_binary, :inspect, :backend_copy, :backend_transfer,
                :backend_deallocate, :to_pointer, :from_pointer, :to_batched, :block, :optional]

  for {name, arity} <- Nx.Backend.behaviour_info(:callbacks) do
    args = Macro.generate_arguments(arity, __MODULE__)

    cond do
      name == :init ->
        def init(opts), do: opts

      name == :from_binary ->
        def from_binary(out, binary, _opts),
          do: NarrowRecorder.from_bb(Nx.BinaryBackend.from_binary(out, binary, []))

      name in [:backend_copy, :backend_transfer] ->
        def unquote(name)(tensor, backend, opts) do
          bb = NarrowRecorder.to_bb(tensor)
          if backend == __MODULE__, do: tensor, else: Nx.BinaryBackend.backend_copy(bb, backend, opts)
        end

      name in @passthrough ->
        def unquote(name)(unquote_splicing(args)) do
          apply(Nx.BinaryBackend, unquote(name), NarrowRecorder.to_bb(unquote(args)))
          |> NarrowRecorder.from_bb()
        end

      true ->
        def unquote(name)(unquote_splicing(args)) do
          result =
            apply(Nx.BinaryBackend, unquote(name), NarrowRecorder.to_bb(unquote(args)))
            |> NarrowRecorder.from_bb()

          NarrowRecorder.record(unquote(name), unquote(args), result)
          result
        end
    end
  end
end

defmodule NarrowRecorder do
  def narrow?({:f, 8}), do: true
  def narrow?({:f8_e4m3fn, 8}), do: true
  def narrow?({k, b}) when k in [:s, :u] and b in [2, 4], do: true
  def narrow?(_), do: false

  def type_name({:f8_e4m3fn, 8}), do: "f8_e4m3fn"
  def type_name({k, b}), do: "#{k}#{b}"

  # tensors of this backend <-> Nx.BinaryBackend's (same state)
  def to_bb(%Nx.Tensor{data: %NarrowRecorder.Backend{state: s}} = t),
    do: %{t | data: %Nx.BinaryBackend{state: s}}

  def to_bb(%Nx.Tensor{data: %Nx.BinaryBackend{}} = t), do: t
  def to_bb(%Nx.Tensor{} = t), do: t
  def to_bb(list) when is_list(list), do: Enum.map(list, &to_bb/1)
  def to_bb(tuple) when is_tuple(tuple), do: tuple |> Tuple.to_list() |> to_bb() |> List.to_tuple()
  def to_bb(other), do: other

  def from_bb(%Nx.Tensor{data: %Nx.BinaryBackend{state: s}} = t),
    do: %{t | data: %NarrowRecorder.Backend{state: s}}

  def from_bb(list) when is_list(list), do: Enum.map(list, &from_bb/1)
  def from_bb(tuple) when is_tuple(tuple), do: tuple |> Tuple.to_list() |> from_bb() |> List.to_tuple()
  def from_bb(other), do: other

  def has_narrow?(%Nx.Tensor{type: type}), do: narrow?(type)
  def has_narrow?(list) when is_list(list), do: Enum.any?(list, &has_narrow?/1)
  def has_narrow?(tuple) when is_tuple(tuple), do: has_narrow?(Tuple.to_list(tuple))
  def has_narrow?(_), do: false

  # the whole-byte binary of a tensor (sub-byte ones padded with zero bits)
  def bytes(%Nx.Tensor{data: %{state: s}}) do
    pad = rem(8 - rem(bit_size(s), 8), 8)
    <<s::bitstring, 0::size(pad)>>
  end

  def tensor_json(t),
    do: %{"type" => type_name(t.type), "shape" => Tuple.to_list(t.shape), "data" => Base.encode64(bytes(t))}

  def template_json(%Nx.Tensor{} = t), do: %{"type" => type_name(t.type), "shape" => Tuple.to_list(t.shape)}
  def template_json(list) when is_list(list), do: Enum.map(list, &template_json/1)
  def template_json(tuple) when is_tuple(tuple), do: template_json(Tuple.to_list(tuple))

  def result_json(%Nx.Tensor{} = t), do: tensor_json(t)
  def result_json(list) when is_list(list), do: Enum.map(list, &result_json/1)
  def result_json(tuple) when is_tuple(tuple), do: result_json(Tuple.to_list(tuple))

  def arg_json(%Nx.Tensor{} = t), do: %{"tensor" => tensor_json(t)}
  def arg_json(nil), do: nil
  def arg_json(b) when is_boolean(b), do: b
  def arg_json(a) when is_atom(a), do: %{"atom" => Atom.to_string(a)}

  def arg_json(i) when is_integer(i) do
    if abs(i) <= 9_007_199_254_740_992, do: i, else: %{"int" => Integer.to_string(i)}
  end

  def arg_json(f) when is_float(f), do: f
  def arg_json(%Complex{re: re, im: im}), do: %{"complex" => [arg_json(re), arg_json(im)]}
  def arg_json(t) when is_tuple(t), do: %{"tuple" => Enum.map(Tuple.to_list(t), &arg_json/1)}
  def arg_json([]), do: []

  def arg_json([{k, _} | _] = kw) when is_atom(k) do
    if Keyword.keyword?(kw),
      do: %{"opts" => Jason.OrderedObject.new(Enum.map(kw, fn {k, v} -> {Atom.to_string(k), arg_json(v)} end))},
      else: Enum.map(kw, &arg_json/1)
  end

  def arg_json(list) when is_list(list), do: Enum.map(list, &arg_json/1)
  def arg_json(b) when is_binary(b), do: %{"binary" => Base.encode64(b)}
  def arg_json(f) when is_function(f), do: throw(:function_argument)

  # Nx.BinaryBackend compiled on OTP < 27 loses the sign of the 8-bit
  # floats' zeros: Nx.Floating.load_f8 reads both f8 zeros as -0.0 (the
  # compiler merges the 0.0 and -0.0 literals, equal there), and
  # dump_f8_e4m3fn writes -0.0 as 0x00 (its +0.0 clause matches -0.0). The
  # sweep gives f8 no zeros, and a case with an f8_e4m3fn 0x00 in its
  # answer (which may stand for -0.0) is not kept.
  def zero_sign_lost?(%Nx.Tensor{type: {:f8_e4m3fn, 8}} = t), do: :binary.match(bytes(t), <<0>>) != :nomatch
  def zero_sign_lost?(list) when is_list(list), do: Enum.any?(list, &zero_sign_lost?/1)
  def zero_sign_lost?(tuple) when is_tuple(tuple), do: zero_sign_lost?(Tuple.to_list(tuple))
  def zero_sign_lost?(_), do: false

  def record(name, [out | rest], result) do
    if Process.get(:recording) && (has_narrow?(out) || has_narrow?(rest) || has_narrow?(result)) &&
         not zero_sign_lost?(result) do
      try do
        line =
          Jason.encode!(
            Jason.OrderedObject.new([
              {"op", Atom.to_string(name)},
              {"out", template_json(out)},
              {"args", Enum.map(rest, &arg_json/1)},
              {"result", result_json(result)},
              {"tag", Process.get(:tag, "narrow")}
            ])
          )

        Process.put(:lines, [line | Process.get(:lines, [])])
      catch
        :function_argument -> :ok
      end
    end
  end
end

defmodule NarrowRecorder.Sweep do
  @types [{:f, 8}, {:f8_e4m3fn, 8}, {:s, 2}, {:s, 4}, {:u, 2}, {:u, 4}]
  @f8_subnormals [0x01, 0x02, 0x03, 0x81, 0x82, 0x83]

  def case!(tag, fun) do
    Process.put(:tag, "narrow #{tag}")
    Process.put(:recording, true)

    try do
      fun.()
    rescue
      _ -> :ok
    after
      Process.put(:recording, false)
    end
  end

  # every value of a type (f8 without its subnormals), as a tensor
  def all(type) do
    bin =
      case type do
        {:f, 8} -> for b <- 0..255, b not in @f8_subnormals and b not in [0x00, 0x80], into: <<>>, do: <<b>>
        {:f8_e4m3fn, 8} -> for b <- 0..255, into: <<>>, do: <<b>>
        {k, bits} -> for v <- range(k, bits), into: <<>>, do: <<v::size(bits)>>
      end

    n = div(bit_size(bin), elem(type, 1))
    Nx.from_binary(pad(bin), type) |> Nx.slice([0], [n])
  end

  defp range(:s, bits), do: -Bitwise.bsl(1, bits - 1)..(Bitwise.bsl(1, bits - 1) - 1)
  defp range(:u, bits), do: 0..(Bitwise.bsl(1, bits) - 1)

  defp pad(bits), do: <<bits::bitstring, 0::size(rem(8 - rem(bit_size(bits), 8), 8))>>

  # a sample of a type's values: up to n of them, spread over all
  def sample(type, n) do
    a = all(type)
    size = Nx.size(a)
    idx = Nx.tensor(Enum.uniq(for i <- 0..(n - 1), do: div(i * size, n)))
    Nx.take(a, idx)
  end

  def float?({:f, _}), do: true
  def float?({:f8_e4m3fn, _}), do: true
  def float?(_), do: false

  def run do
    Nx.default_backend(NarrowRecorder.Backend)
    wide = [{:u, 8}, {:u, 16}, {:u, 32}, {:u, 64}, {:s, 8}, {:s, 16}, {:s, 32}, {:s, 64}, {:f, 16}, {:bf, 16},
            {:f, 32}, {:f, 64}, {:c, 64}, {:c, 128}]

    f64_edges = [0.0, -0.0, 1.0, -1.0, 0.5, 1.5, 2.5, -2.5, 3.7, -3.7, 7.5, 8.0, 15.0, 16.0, 100.0, -100.0,
                 240.0, 448.0, 449.0, 464.0, 500.0, -500.0, 57344.0, 61440.0, 65504.0, 65520.0, 1.0e6,
                 1.0e-3, 0.015, 0.0078, 1.0e-5, 6.0e-8, 1.0e-10, 1.9375, 1.96875, 0.1, 0.3, 1.0e30,
                 :nan, :infinity, :neg_infinity]

    ints = [0, 1, -1, 2, -2, 3, 7, -8, 8, 15, 16, 17, 127, -128, 255, 256, 65535, -65536, 2_147_483_647]

    for t <- @types do
      a = all(t)

      # conversions, both ways, and the binary forms
      for w <- wide ++ @types, w != t, do: case!("as_type from", fn -> Nx.as_type(a, w) end)

      for w <- wide do
        src =
          cond do
            elem(w, 0) in [:f, :bf, :c] -> Nx.tensor(f64_edges, type: w)
            true -> Nx.tensor(ints, type: w)
          end

        case!("as_type to", fn -> Nx.as_type(src, t) end)
      end

      for w <- wide ++ @types, w != t, elem(w, 1) == elem(t, 1), do: case!("bitcast", fn -> Nx.bitcast(a, w) end)

      # creation
      case!("iota", fn -> Nx.iota({3, 7}, type: t, axis: 1) end)
      case!("iota flat", fn -> Nx.iota({20}, type: t) end)
      case!("eye", fn -> Nx.eye(3, type: t) end)

      for v <- [0, 1, -1, 3, 9, -9, 2.5, 300.0, -0.0] do
        case!("constant", fn -> Nx.broadcast(Nx.tensor(v, type: t), {2}) end)
      end

      # unary
      unary =
        if float?(t),
          do: [:abs, :negate, :sign, :floor, :ceil, :round, :exp, :expm1, :log, :log1p, :sqrt, :rsqrt, :cbrt,
               :sin, :cos, :tan, :tanh, :sigmoid, :erf, :erfc, :atan, :asinh, :is_nan, :is_infinity],
          else: [:abs, :negate, :sign, :bitwise_not, :population_count]

      for op <- unary, do: case!("unary #{op}", fn -> apply(Nx, op, [a]) end)

      # the same on moderate values (on every value, Nx.BinaryBackend
      # raises where Erlang's :math does: exp of 448, log of -1, ...)
      mod =
        if float?(t),
          do: Nx.tensor([-3.5, -1.0, -0.5 | if(t == {:f, 8}, do: [], else: [-0.0, 0.0])] ++
                          [0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 7.5, 10.0], type: t),
          else: a

      pos = if float?(t), do: Nx.tensor([0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 7.5, 10.0], type: t), else: a

      for op <- unary, do: case!("unary #{op} moderate", fn -> apply(Nx, op, [mod]) end)

      if float?(t) do
        for op <- [:log, :log1p, :sqrt, :rsqrt, :floor, :ceil, :round],
            do: case!("unary #{op} positive", fn -> apply(Nx, op, [pos]) end)
      end

      # binary: a sample against a sample, every pair
      s = sample(t, if(float?(t), do: 24, else: 16))
      n = Nx.size(s)
      x = Nx.reshape(s, {n, 1})
      y = Nx.reshape(s, {1, n})

      binary =
        if float?(t),
          do: [:add, :subtract, :multiply, :divide, :pow, :max, :min, :atan2, :equal, :less, :greater_equal,
               :not_equal],
          else: [:add, :subtract, :multiply, :max, :min, :equal, :less, :greater_equal, :bitwise_and,
                 :bitwise_or, :bitwise_xor, :quotient, :remainder]

      for op <- binary, do: case!("binary #{op}", fn -> apply(Nx, op, [x, y]) end)

      # by values that are not zero (Nx.BinaryBackend raises on a zero)
      nz = Nx.reshape(mod, {1, :auto}) |> Nx.to_flat_list() |> Enum.reject(&(&1 == 0))
      nz = Nx.tensor([nz], type: t)

      for op <- [:quotient, :remainder, :divide, :pow],
          do: case!("binary #{op} nonzero", fn -> apply(Nx, op, [Nx.reshape(mod, {:auto, 1}), nz]) end)

      unless float?(t) do
        {_, bits} = t
        counts = Nx.iota({1, bits + 2}, type: t)
        case!("binary shifts", fn -> Nx.left_shift(x, counts) end)
        case!("binary shifts", fn -> Nx.right_shift(x, counts) end)
      end

      # mixed types, numbers included
      for w <- [{:s, 8}, {:u, 8}, {:f, 16}, {:f, 32}, {:bf, 16}] ++ @types do
        case!("mixed", fn -> Nx.add(s, Nx.as_type(s, w)) end)
        case!("mixed", fn -> Nx.multiply(Nx.as_type(s, w), s) end)
      end

      for f <- [fn -> Nx.add(s, 1) end, fn -> Nx.add(s, -2) end, fn -> Nx.add(s, 3) end,
                fn -> Nx.multiply(s, 1.5) end, fn -> Nx.divide(s, 2) end],
          do: case!("mixed numbers", f)

      # reductions, scans, products, shapes, selection
      m = Nx.reshape(Nx.slice(a, [0], [min(16, Nx.size(a))]), {4, :auto})

      for f <- [
              fn -> Nx.sum(m) end,
              fn -> Nx.sum(m, axes: [1]) end,
              fn -> Nx.product(m, axes: [0]) end,
              fn -> Nx.reduce_max(m, axes: [1]) end,
              fn -> Nx.reduce_min(m) end,
              fn -> Nx.argmax(m, axis: 1) end,
              fn -> Nx.argmin(m, axis: 0) end,
              fn -> Nx.all(m) end,
              fn -> Nx.any(m, axes: [1]) end,
              fn -> Nx.cumulative_sum(m, axis: 1) end,
              fn -> Nx.cumulative_max(m, axis: 0) end
            ],
            do: case!("reductions", f)

      for f <- [
              fn -> Nx.dot(m, Nx.transpose(m)) end,
              fn -> Nx.dot(m, Nx.as_type(Nx.transpose(m), {:f, 32})) end
            ],
            do: case!("dot", f)

      for f <- [
              fn -> Nx.transpose(m) end,
              fn -> Nx.reverse(m, axes: [1]) end,
              fn -> Nx.slice(m, [1, 1], [2, 2]) end,
              fn -> Nx.concatenate([m, m], axis: 1) end,
              fn -> Nx.stack([m, m]) end,
              fn -> Nx.pad(m, Nx.tensor(1, type: t), [{1, 0, 0}, {0, 2, 1}]) end,
              fn -> Nx.put_slice(m, [0, 0], Nx.slice(m, [2, 0], [1, 2])) end,
              fn -> Nx.broadcast(Nx.slice(m, [0, 0], [1, 1]), {2, 3}) end
            ],
            do: case!("shape", f)

      for f <- [
              fn -> Nx.select(Nx.greater(m, Nx.slice(m, [0, 0], [1, 1])), m, Nx.reverse(m)) end,
              fn -> Nx.clip(m, Nx.slice(m, [1, 0], [1, 1]) |> Nx.squeeze(), Nx.slice(m, [3, 1], [1, 1]) |> Nx.squeeze()) end
            ],
            do: case!("select", f)

      for f <- [
              fn -> Nx.sort(m, axis: 1) end,
              fn -> Nx.argsort(m, axis: 1, direction: :desc) end
            ],
            do: case!("sort", f)

      for f <- [
              fn -> Nx.take(m, Nx.tensor([3, 0, 0]), axis: 0) end,
              fn -> Nx.gather(m, Nx.tensor([[0, 1], [3, 2]])) end,
              fn -> Nx.indexed_put(m, Nx.tensor([[0, 0], [1, 1]]), Nx.slice(Nx.flatten(m), [2], [2])) end,
              fn -> Nx.indexed_add(m, Nx.tensor([[0, 0], [0, 0]]), Nx.slice(Nx.flatten(m), [2], [2])) end
            ],
            do: case!("index", f)

      for f <- [
              fn -> Nx.window_sum(m, {2, 2}) end,
              fn -> Nx.window_max(m, {1, 2}) end
            ],
            do: case!("window", f)
    end

    Process.get(:lines, []) |> Enum.reverse()
  end
end

[path] = System.argv()
# Nx's own modules suffice (its application need not start)
Application.load(:nx)
lines = NarrowRecorder.Sweep.run()
File.write!(path, Enum.map(lines, &[&1, ?\n]))
IO.puts("#{length(lines)} cases written to #{path}")
