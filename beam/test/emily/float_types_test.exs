defmodule Emily.FloatTypesTest do
  # the float types that Emily.Fast, Emily.Quantization and the quantized
  # dot take: f16, bf16, f32, f64 and nothing else
  use ExUnit.Case, async: true
  import Emily.FloatTypes, only: [float?: 1]

  test "f16, bf16, f32 and f64 are float types" do
    for type <- [{:f, 16}, {:bf, 16}, {:f, 32}, {:f, 64}], do: assert(float?(type), inspect(type))
  end

  test "integers, complex, 8-bit floats and malformed types are not" do
    for type <- [
          {:s, 32},
          {:u, 8},
          {:c, 64},
          {:f, 8},
          {:f8_e4m3fn, 8},
          {:bf, 32},
          {:f, 128},
          :f32,
          nil
        ],
        do: refute(float?(type), inspect(type))
  end
end
