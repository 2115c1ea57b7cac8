defmodule Emily.Test.Corpus do
  @moduledoc """
  Runs conformance corpus cases (tests/corpus/*.jsonl.gz, see its
  README.md) through Emily.Native: the JSON arguments become the Erlang
  terms an Nx.Backend callback receives (tensors as maps with :data,
  :type and :shape, like %Nx.Tensor{}), the NIF decodes them into the
  engine's dispatcher, and the result is compared with the recorded one
  by the rules of tests/conformance/compare.c: integer outputs and the
  "exact" ops bit for bit (any NaN equal to any NaN), other float outputs
  within 4 ULP (f32, f64) or 1 ULP (f16, bf16) per real component, NaN
  equal to NaN, infinities exact.
  """

  alias Emily.Test.JSON
  alias Emily.Native

  @exact_ops ~w(abs negate conjugate real imag ceil floor round sign
    as_type bitcast constant iota eye
    reshape squeeze broadcast transpose pad reverse concatenate stack
    slice put_slice select clip min max reduce_max reduce_min
    argmax argmin take take_along_axis gather indexed_put sort argsort
    top_k window_max window_min cumulative_max cumulative_min
    window_scatter_max window_scatter_min)

  @doc """
  The corpus directory: EMILY_CORPUS (relative to the repository root), or
  the copy that ships in the repository, tests/corpus (gzip-compressed).
  """
  def dir do
    root = Path.expand("../../..", __DIR__)
    Path.expand(System.get_env("EMILY_CORPUS", "tests/corpus"), root)
  end

  # The lines of a corpus file, read from FILE or else from FILE.gz.
  defp stream_lines(file) do
    path = Path.join(dir(), file)

    cond do
      File.exists?(path) ->
        File.stream!(path)

      File.exists?(path <> ".gz") ->
        (path <> ".gz")
        |> File.read!()
        |> :zlib.gunzip()
        |> String.split("\n", trim: true)

      true ->
        nil
    end
  end

  @doc "The device the cases run on: EMILY_CORPUS_DEVICE (cpu, cuda, cuda:N), default the CPU."
  def device, do: env_device("EMILY_CORPUS_DEVICE")

  @doc "The device an environment variable names (cpu, cuda, cuda:N), default the CPU."
  def env_device(variable) do
    case System.get_env(variable) do
      nil -> :cpu
      name -> Emily.normalize_device(name)
    end
  end

  @doc "Raw lines of a corpus file grouped by op, in file order: [{op, [{index, line}]}]."
  def lines_by_op(file) do
    if lines = stream_lines(file) do
      lines
      |> Stream.with_index()
      |> Enum.reduce(%{}, fn {line, i}, acc ->
        [_, op] = Regex.run(~r/"op":\s*"([a-z_0-9]+)"/, line)
        Map.update(acc, op, [{i, line}], &[{i, line} | &1])
      end)
      |> Enum.map(fn {op, cases} -> {op, Enum.reverse(cases)} end)
      |> Enum.sort()
    else
      nil
    end
  end

  @doc "Op names of a corpus file with their case counts (nil if the file is absent)."
  def ops(file) do
    case lines_by_op(file) do
      nil -> nil
      groups -> Enum.map(groups, fn {op, cases} -> {op, length(cases)} end)
    end
  end

  @doc """
  Runs one case line; returns :ok or {:error, message}. Every tensor made
  for the case is deallocated before returning.
  """
  def run_case(line) do
    case_ = JSON.decode!(line)
    op = JSON.get(case_, "op")
    Process.put(:corpus_refs, [])

    try do
      out = template(JSON.get(case_, "out"))
      args = Enum.map(JSON.get(case_, "args"), &term/1)

      case Native.dispatch(String.to_atom(op), out, args, device(), nil, 0) do
        {:error, message} ->
          {:error, "error: #{inspect(message)}"}

        result ->
          refs = List.wrap(result)
          Process.put(:corpus_refs, refs ++ Process.get(:corpus_refs))

          wanted = JSON.get(case_, "result")
          wanted = if is_list(wanted), do: wanted, else: [wanted]

          cond do
            # decompositions: the reference's own bits, else the C runner's
            # property checks (tests/conformance/properties.c), as runner.c
            property_checked?(op) and identical?(refs, wanted) ->
              :ok

            property_checked?(op) ->
              Native.test_property_check(String.to_atom(op), args, refs, line)

            true ->
              compare_all(op, refs, wanted, 0)
          end
      end
    after
      Enum.each(Process.delete(:corpus_refs) || [], &Native.deallocate/1)
    end
  end

  # Every output has the recorded type, shape and bytes.
  defp identical?(refs, wanted) do
    length(refs) == length(wanted) and
      Enum.all?(Enum.zip(refs, wanted), fn {ref, want} ->
        {type, shape, _device} = Native.tensor_info(ref)

        type == type(JSON.get(want, "type")) and shape == List.to_tuple(JSON.get(want, "shape")) and
          Native.to_binary!(ref, nil) == Base.decode64!(JSON.get(want, "data"))
      end)
  end

  defp compare_all(_op, [], [], _k), do: :ok

  defp compare_all(op, [ref | refs], [want | wants], k) do
    {type, shape, _device} = Native.tensor_info(ref)
    want_type = type(JSON.get(want, "type"))
    want_shape = List.to_tuple(JSON.get(want, "shape"))
    got = Native.to_binary!(ref, nil)
    expected = Base.decode64!(JSON.get(want, "data"))

    cond do
      type != want_type ->
        {:error, "output #{k} has type #{inspect(type)}, want #{inspect(want_type)}"}

      shape != want_shape ->
        {:error, "output #{k} has shape #{inspect(shape)}, want #{inspect(want_shape)}"}

      byte_size(got) != byte_size(expected) ->
        {:error, "output #{k} has #{byte_size(got)} bytes, want #{byte_size(expected)}"}

      got == expected ->
        compare_all(op, refs, wants, k + 1)

      true ->
        case compare_data(op, type, got, expected) do
          :ok -> compare_all(op, refs, wants, k + 1)
          {:error, msg} -> {:error, "output #{k}: #{msg}"}
        end
    end
  end

  defp compare_all(_op, refs, wants, _k),
    do: {:error, "#{length(refs)} outputs left, #{length(wants)} wanted"}

  @doc """
  True for ops checked by their defining properties, as the C runner decides:
  qr, svd and eigh everywhere; lu, cholesky, triangular_solve, solve and
  determinant off the CPU (cuSOLVER in the input's own precision).
  """
  def property_checked?(op),
    do: Native.test_property_checked_op(String.to_atom(op), device() != :cpu)

  ## JSON -> terms

  @doc false
  def type("bf16"), do: {:bf, 16}

  def type(<<kind, bits::binary>>) when kind in [?u, ?s, ?f, ?c],
    do: {List.to_atom([kind]), String.to_integer(bits)}

  defp template(list) when is_list(list), do: list |> Enum.map(&template/1) |> List.to_tuple()

  defp template(obj) do
    %{type: type(JSON.get(obj, "type")), shape: List.to_tuple(JSON.get(obj, "shape"))}
  end

  defp term(list) when is_list(list), do: Enum.map(list, &term/1)
  defp term({:object, [{"tensor", t}]}), do: tensor(t)
  defp term({:object, [{"int", s}]}), do: String.to_integer(s)
  defp term({:object, [{"atom", a}]}), do: String.to_atom(a)
  defp term({:object, [{"tuple", items}]}), do: items |> Enum.map(&term/1) |> List.to_tuple()
  defp term({:object, [{"binary", b}]}), do: Base.decode64!(b)

  defp term({:object, [{"complex", [re, im]}]}),
    do: %{__struct__: Complex, re: term(re), im: term(im)}

  defp term({:object, [{"opts", {:object, pairs}}]}),
    do: Enum.map(pairs, fn {k, v} -> {String.to_atom(k), term(v)} end)

  defp term(other) when is_number(other) or is_boolean(other) or is_nil(other), do: other

  defp tensor(t) do
    type = type(JSON.get(t, "type"))
    shape = List.to_tuple(JSON.get(t, "shape"))
    ref = Native.from_binary!(device(), type, shape, Base.decode64!(JSON.get(t, "data")))
    Process.put(:corpus_refs, [ref | Process.get(:corpus_refs)])
    %{__struct__: Nx.Tensor, data: %{__struct__: Emily.Backend, ref: ref}, type: type, shape: shape}
  end

  ## Comparison (tests/conformance/compare.c)

  @doc false
  def compare_data(op, {kind, _} = type, got, want) when kind in [:u, :s] do
    bytes = div(elem(type, 1), 8)
    first_difference(got, want, bytes, 0, op)
  end

  def compare_data(op, {kind, bits}, got, want) do
    part_bits = if kind == :c, do: div(bits, 2), else: bits
    part = if kind == :c, do: {:f, part_bits}, else: {kind, bits}
    parts = if kind == :c, do: 2, else: 1
    exact = op in @exact_ops
    max_ulp = if part_bits == 16, do: 1, else: 4
    compare_floats(got, want, part, part_bits, parts, exact, max_ulp, 0)
  end

  defp first_difference(<<>>, <<>>, _bytes, _i, _op), do: :ok

  defp first_difference(got, want, bytes, i, op) do
    <<g::binary-size(bytes), grest::binary>> = got
    <<w::binary-size(bytes), wrest::binary>> = want

    if g == w,
      do: first_difference(grest, wrest, bytes, i + 1, op),
      else: {:error, "element #{i} differs"}
  end

  defp compare_floats(<<>>, <<>>, _part, _bits, _parts, _exact, _max, _i), do: :ok

  defp compare_floats(got, want, part, bits, parts, exact, max_ulp, i) do
    <<g::size(bits)-little, grest::binary>> = got
    <<w::size(bits)-little, wrest::binary>> = want

    if float_close(part, bits, g, w, exact, max_ulp) do
      compare_floats(grest, wrest, part, bits, parts, exact, max_ulp, i + 1)
    else
      where = if parts == 2, do: if(rem(i, 2) == 0, do: " (real)", else: " (imag)"), else: ""

      {:error,
       "element #{div(i, parts)}#{where}: got #{show(part, bits, g)}, want #{show(part, bits, w)}"}
    end
  end

  defp float_close(part, bits, g, w, exact, max_ulp) do
    gc = classify(part, bits, g)
    wc = classify(part, bits, w)

    cond do
      gc == :nan or wc == :nan -> gc == wc
      exact -> g == w
      gc == :inf or wc == :inf -> g == w
      true -> abs(ordered(g, bits) - ordered(w, bits)) <= max_ulp
    end
  end

  # exponent and mantissa widths of each float format
  defp layout({:f, 16}), do: {5, 10}
  defp layout({:bf, 16}), do: {8, 7}
  defp layout({:f, 32}), do: {8, 23}
  defp layout({:f, 64}), do: {11, 52}

  defp classify(part, _bits, v) do
    {e, m} = layout(part)
    exp = Bitwise.band(Bitwise.bsr(v, m), Bitwise.bsl(1, e) - 1)
    mant = Bitwise.band(v, Bitwise.bsl(1, m) - 1)

    cond do
      exp == Bitwise.bsl(1, e) - 1 and mant != 0 -> :nan
      exp == Bitwise.bsl(1, e) - 1 -> :inf
      true -> :finite
    end
  end

  defp ordered(v, bits) do
    sign = Bitwise.bsl(1, bits - 1)
    mag = Bitwise.band(v, sign - 1)
    if Bitwise.band(v, sign) != 0, do: -mag, else: mag
  end

  defp show({:f, 64}, _bits, v), do: inspect(decode_f64(<<v::64-little>>))
  defp show({:f, 32}, _bits, v), do: inspect(decode_f32(<<v::32-little>>))

  defp show(_part, bits, v),
    do: "0x" <> String.pad_leading(Integer.to_string(v, 16), div(bits, 4), "0")

  defp decode_f64(<<x::float-64-little>>), do: x
  defp decode_f64(_), do: :non_finite
  defp decode_f32(<<x::float-32-little>>), do: x
  defp decode_f32(_), do: :non_finite
end
