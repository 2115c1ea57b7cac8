defmodule Emily.FloatTypes do
  @moduledoc false
  # The Nx floating-point types that Emily.Fast's fused operations and
  # Emily.Quantization (and the quantized dot of Emily.Backend) take:
  # f16, bf16, f32 and f64. Nx's 8-bit floats are not among them.

  @doc "Whether an Nx type is one of f16, bf16, f32 and f64."
  def float?({:f, bits}) when bits in [16, 32, 64], do: true
  def float?({:bf, 16}), do: true
  def float?(_), do: false
end
