#!/usr/bin/env python3
"""Graft a real tokenizer onto a random-weight GGUF (for recording real llama-server transcripts).

usage: graft.py MODEL.gguf VOCAB.gguf OUT.gguf [CTX]

MODEL is a file written by llama.cpp's test-llama-archs (f32 tensors, a 128-token dummy vocab);
VOCAB one of the bundle's models/ggml-vocab-*.gguf (tokenizer only). OUT gets MODEL's metadata
and tensors with VOCAB's tokenizer.* keys, <arch>.vocab_size and the vocab-sized tensors
(token_embd, output) resized, filled with small deterministic values, and <arch>.context_length
set to CTX (default 8192). Pure Python (no numpy). This is the stopgap used before
`slipway gguf synth` existed on main; the transcripts it helped record are real llama-server
bytes either way.
"""
import struct, sys
from array import array

T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 = range(13)
FMT = {T_U8: "<B", T_I8: "<b", T_U16: "<H", T_I16: "<h", T_U32: "<I", T_I32: "<i", T_F32: "<f",
       T_BOOL: "<?", T_U64: "<Q", T_I64: "<q", T_F64: "<d"}

class R:
    def __init__(self, b): self.b, self.o = b, 0
    def take(self, n):
        v = self.b[self.o:self.o + n]; self.o += n; return v
    def u32(self): return struct.unpack("<I", self.take(4))[0]
    def u64(self): return struct.unpack("<Q", self.take(8))[0]
    def s(self): return self.take(self.u64())
    def val(self, t):
        if t == T_STR: return self.s()
        if t == T_ARR:
            et, n = self.u32(), self.u64()
            return (et, [self.val(et) for _ in range(n)])
        f = FMT[t]; return struct.unpack(f, self.take(struct.calcsize(f)))[0]

def read(path):
    r = R(open(path, "rb").read())
    assert r.take(4) == b"GGUF"
    ver, nt, nkv = r.u32(), r.u64(), r.u64()
    kv = []
    for _ in range(nkv):
        k = r.s(); t = r.u32(); kv.append([k, t, r.val(t)])
    tens = []
    for _ in range(nt):
        name = r.s(); nd = r.u32(); dims = [r.u64() for _ in range(nd)]
        tens.append([name, dims, r.u32(), r.u64()])
    align = 32
    for k, t, v in kv:
        if k == b"general.alignment": align = v
    data0 = (r.o + align - 1) // align * align
    return ver, kv, tens, r.b, data0, align

def wval(out, t, v):
    if t == T_STR: out += struct.pack("<Q", len(v)) + v
    elif t == T_ARR:
        et, items = v; out += struct.pack("<IQ", et, len(items))
        for it in items: wval(out, et, it)
    else: out += struct.pack(FMT[t], v)

def main():
    model, vocab, dst = sys.argv[1:4]
    ctx = int(sys.argv[4]) if len(sys.argv) > 4 else 8192
    ver, kv, tens, mb, d0, align = read(model)
    _, vkv, _, _, _, _ = read(vocab)
    arch = [v for k, t, v in kv if k == b"general.architecture"][0]
    toks = [v for k, t, v in vkv if k == b"tokenizer.ggml.tokens"][0][1]
    nv = len(toks)
    old_nv = [v for k, t, v in kv if k == arch + b".vocab_size"][0]
    kv = [e for e in kv if not e[0].startswith(b"tokenizer.")]
    for e in kv:
        if e[0] == arch + b".vocab_size": e[2] = nv
        if e[0] == arch + b".context_length": e[2] = ctx
    kv += [e for e in vkv if e[0].startswith(b"tokenizer.")]
    pattern = array("f", [((i * 2654435761) % 2001 - 1000) / 50000.0 for i in range(4099)])
    blobs = []
    for name, dims, typ, off in tens:
        n = 1
        for d in dims: n *= d
        if dims and dims[-1] == old_nv and name in (b"token_embd.weight", b"output.weight"):
            assert typ == 0, "only f32 vocab tensors are resized"
            dims[-1] = nv
            n = n // old_nv * nv
            a = pattern * (n // len(pattern) + 1)
            del a[n:]
            blobs.append(a.tobytes())
        else:
            size = n * 4 if typ == 0 else None
            assert size is not None, "random models from test-llama-archs are f32"
            blobs.append(mb[d0 + off:d0 + off + size])
    out = bytearray(b"GGUF" + struct.pack("<IQQ", ver, len(tens), len(kv)))
    for k, t, v in kv:
        out += struct.pack("<Q", len(k)) + k + struct.pack("<I", t); wval(out, t, v)
    off = 0
    offs = []
    for b in blobs:
        offs.append(off); off += (len(b) + align - 1) // align * align
    for (name, dims, typ, _), o in zip(tens, offs):
        out += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(dims))
        for d in dims: out += struct.pack("<Q", d)
        out += struct.pack("<IQ", typ, o)
    out += b"\0" * ((len(out) + align - 1) // align * align - len(out))
    with open(dst, "wb") as f:
        f.write(out)
        for b, o in zip(blobs, offs):
            f.write(b); f.write(b"\0" * ((len(b) + align - 1) // align * align - len(b)))
    print(f"{dst}: {arch.decode()} with {nv} tokens, ctx {ctx}")

main()
