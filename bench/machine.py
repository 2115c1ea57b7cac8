"""The machine a benchmark runs on, as bench/run and bench/run_families
describe it in their results files."""
import platform


def _cpuinfo(field):
    """The value of the first /proc/cpuinfo line naming field (None when
    there is none or no /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(field):
                    return line.split(":", 1)[1]
    except OSError:
        pass
    return None


def cpu_model():
    model = _cpuinfo("model name")
    return model.strip() if model is not None else platform.processor() or "unknown"


def cpu_flags():
    """The vector extensions that matter to the kernels, of those the CPU has."""
    flags = _cpuinfo("flags")
    if flags is None:
        return "?"
    fl = flags.split()
    keep = [x for x in ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "f16c") if x in fl]
    return " ".join(keep)
