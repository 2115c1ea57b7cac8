#!/usr/bin/env python3
"""Turn libdevice functions (LLVM IR text from llvm-extract) into IR that
llc compiles for the host: drop the NVPTX target and address space 1,
call nvvm_intrinsics.c's emu_* functions for the NVVM intrinsics, and
replace the few inline PTX blocks (128-bit integer steps, rsqrt.approx, a
NaN-aware select) with calls of their stand-ins.

usage: rewrite_ll.py IN.ll OUT.ll"""
import re
import sys

# A fragment of each inline PTX block -> (return type, stand-in).
ASM = {
    'mad.lo.cc.u32   r0, alo, blo, clo': ('{ i64, i64 }', 'emu_umad128'),
    'sub.cc.u32': ('{ i64, i64 }', 'emu_sub128'),
    'mul.lo.u32      r0, alo, blo': ('{ i64, i64 }', 'emu_mul128'),
    'add.cc.u32': ('{ i64, i64 }', 'emu_add128'),
    'rsqrt.approx.ftz.f64': ('double', 'emu_rsqrt_approx_ftz_d'),
    'setp.equ.f64': ('double', 'emu_sel_equ'),
}
CALL = re.compile(r'(\s*%\S+ = call )(\{ i64, i64 \}|double) asm ".*?", "[^"]*"\((.*?)\)( #\d+)?(, !srcloc !\d+)?$')


def main(src, dst):
    out, decls = [], {}
    for line in open(src).read().split('\n'):
        if line.startswith('target '):
            continue
        line = line.replace(' addrspace(1)', '').replace('hidden ', '')
        line = line.replace('@__nvvm_reflect', '@emu_reflect')
        line = re.sub(r'@llvm\.nvvm\.([a-z0-9.]+)', lambda m: '@emu_' + m.group(1).replace('.', '_'), line)
        m = CALL.match(line)
        if m:
            hit = [v for k, v in ASM.items() if k in line]
            if not hit:
                sys.exit('rewrite_ll.py: unknown inline PTX: ' + line[:200])
            rtype, fn = hit[0]
            args = m.group(3)
            types = ', '.join(a.strip().split(' ')[0] for a in args.split(','))
            decls[fn] = 'declare %s @%s(%s)' % (rtype, fn, types)
            line = '%s%s @%s(%s)' % (m.group(1), rtype, fn, args)
        elif ' asm ' in line:
            sys.exit('rewrite_ll.py: inline PTX not understood: ' + line[:200])
        out.append(line)
    open(dst, 'w').write('\n'.join(out) + '\n' + '\n'.join(decls.values()) + '\n')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2])
