defmodule Emily.Test.JSON do
  @moduledoc """
  A small JSON decoder for the conformance corpus (Elixir 1.14 has no
  JSON module and CI has no hex packages).

  Objects decode to `{:object, [{key, value}, ...]}` with the keys in
  their order (the corpus encodes keyword lists as objects and their
  order matters), arrays to lists, numbers to integers or floats,
  `null` to `nil`.
  """

  @doc "Decodes one JSON document; raises ArgumentError on malformed input."
  def decode!(text) when is_binary(text) do
    case value(skip_ws(text)) do
      {v, rest} ->
        case skip_ws(rest) do
          "" -> v
          other -> error("trailing characters", other)
        end
    end
  end

  @doc "The value of `key` in a decoded object (nil if absent)."
  def get({:object, pairs}, key) do
    case List.keyfind(pairs, key, 0) do
      {_, v} -> v
      nil -> nil
    end
  end

  def get(_, _), do: nil

  defp error(what, rest) do
    raise ArgumentError,
          "JSON: #{what} at #{inspect(binary_part(rest, 0, min(byte_size(rest), 20)))}"
  end

  defp skip_ws(<<c, rest::binary>>) when c in [?\s, ?\t, ?\n, ?\r], do: skip_ws(rest)
  defp skip_ws(rest), do: rest

  defp value(<<?{, rest::binary>>), do: object(skip_ws(rest), [])
  defp value(<<?[, rest::binary>>), do: array(skip_ws(rest), [])
  defp value(<<?", rest::binary>>), do: string(rest, [])
  defp value(<<"true", rest::binary>>), do: {true, rest}
  defp value(<<"false", rest::binary>>), do: {false, rest}
  defp value(<<"null", rest::binary>>), do: {nil, rest}
  defp value(<<c, _::binary>> = text) when c == ?- or c in ?0..?9, do: number(text)
  defp value(rest), do: error("unexpected input", rest)

  defp object(<<?}, rest::binary>>, []), do: {{:object, []}, rest}

  defp object(<<?", rest::binary>>, acc) do
    {key, rest} = string(rest, [])

    case skip_ws(rest) do
      <<?:, rest::binary>> ->
        {v, rest} = value(skip_ws(rest))
        acc = [{key, v} | acc]

        case skip_ws(rest) do
          <<?,, rest::binary>> -> object(skip_ws(rest), acc)
          <<?}, rest::binary>> -> {{:object, Enum.reverse(acc)}, rest}
          other -> error("expected , or }", other)
        end

      other ->
        error("expected :", other)
    end
  end

  defp object(rest, _), do: error("expected a key", rest)

  defp array(<<?], rest::binary>>, []), do: {[], rest}

  defp array(text, acc) do
    {v, rest} = value(text)
    acc = [v | acc]

    case skip_ws(rest) do
      <<?,, rest::binary>> -> array(skip_ws(rest), acc)
      <<?], rest::binary>> -> {Enum.reverse(acc), rest}
      other -> error("expected , or ]", other)
    end
  end

  defp string(<<?", rest::binary>>, acc), do: {IO.iodata_to_binary(Enum.reverse(acc)), rest}

  defp string(<<?\\, c, rest::binary>>, acc) when c in [?", ?\\, ?/],
    do: string(rest, [c | acc])

  defp string(<<?\\, ?b, rest::binary>>, acc), do: string(rest, [?\b | acc])
  defp string(<<?\\, ?f, rest::binary>>, acc), do: string(rest, [?\f | acc])
  defp string(<<?\\, ?n, rest::binary>>, acc), do: string(rest, [?\n | acc])
  defp string(<<?\\, ?r, rest::binary>>, acc), do: string(rest, [?\r | acc])
  defp string(<<?\\, ?t, rest::binary>>, acc), do: string(rest, [?\t | acc])

  defp string(<<?\\, ?u, a::binary-size(4), ?\\, ?u, b::binary-size(4), rest::binary>>, acc)
       when a >= "D800" and a < "DC00" do
    hi = String.to_integer(a, 16)
    lo = String.to_integer(b, 16)
    cp = 0x10000 + (hi - 0xD800) * 0x400 + (lo - 0xDC00)
    string(rest, [<<cp::utf8>> | acc])
  end

  defp string(<<?\\, ?u, hex::binary-size(4), rest::binary>>, acc),
    do: string(rest, [<<String.to_integer(hex, 16)::utf8>> | acc])

  defp string(<<c, rest::binary>>, acc) when c != ?\\, do: plain(rest, [c | acc])
  defp string(rest, _), do: error("bad string", rest)

  # runs of plain characters are taken in one piece
  defp plain(text, acc) do
    case :binary.match(text, ["\"", "\\"]) do
      {pos, _} ->
        <<chunk::binary-size(pos), rest::binary>> = text
        string(rest, [chunk | acc])

      :nomatch ->
        error("unterminated string", text)
    end
  end

  defp number(text) do
    {num, rest} = take_number(text, [])
    num = IO.iodata_to_binary(Enum.reverse(num))

    value =
      if String.contains?(num, [".", "e", "E"]) do
        num
        |> ensure_fraction()
        |> String.to_float()
      else
        String.to_integer(num)
      end

    {value, rest}
  end

  defp take_number(<<c, rest::binary>>, acc) when c in ?0..?9 or c in [?-, ?+, ?., ?e, ?E],
    do: take_number(rest, [c | acc])

  defp take_number(rest, acc), do: {acc, rest}

  # String.to_float/1 wants digits on both sides of a "." before the exponent
  defp ensure_fraction(num) do
    case String.split(num, ["e", "E"], parts: 2) do
      [mant, exp] -> add_fraction(mant) <> "e" <> exp
      [mant] -> add_fraction(mant)
    end
  end

  defp add_fraction(mant), do: if(String.contains?(mant, "."), do: mant, else: mant <> ".0")
end
