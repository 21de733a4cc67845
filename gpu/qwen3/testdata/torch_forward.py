"""An independent torch forward of a dense Qwen3 model folder, for reference.go's cross-check.

Written from transformers' modeling_qwen3.py as facts (not its code): RMSNorm, q/k head norms
before rotate-half rotary embeddings, grouped-query attention under a causal mask scaled by
head_dim**-0.5, SwiGLU MLP, final norm, lm_head (tied to the embedding when the config says so).
Reads model.safetensors with struct/json and torch.frombuffer (the safetensors package may be
absent). Usage: torch_forward.py JOBS, a JSON list of {"folder", "dtype" (float32 or float64),
"tokens", "out"} (one process for all, as importing torch takes seconds); each job writes the
logits of every position to its out as little-endian float64, [positions, vocab].
"""
import json
import os
import struct
import sys

try:
    import torch
except ImportError:
    sys.exit(77)  # the test tries the next python3, or skips saying torch is absent

DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    buf = bytearray(data[8 + n :])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        begin, end = e["data_offsets"]
        t = torch.frombuffer(buf[begin:end], dtype=DTYPES[e["dtype"]]) if end > begin else torch.zeros(0)
        out[name] = t.reshape(e["shape"])
    return out


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def forward(folder, dtype, tokens):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    w = {k: v.to(dtype) for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    eps, hd = cfg["rms_norm_eps"], cfg["head_dim"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    T = len(tokens)
    ids = torch.tensor(tokens, dtype=torch.long)
    x = w["model.embed_tokens.weight"][ids]  # [T, hidden]
    pos = torch.arange(T, dtype=torch.float64)
    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.outer(pos, inv_freq)
    ang = torch.cat((ang, ang), dim=-1)  # [T, hd]
    cos, sin = ang.cos().to(dtype), ang.sin().to(dtype)
    mask = torch.full((T, T), float("-inf"), dtype=dtype).triu(1)
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, nh, hd).transpose(0, 1)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, nkv, hd).transpose(0, 1)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, nkv, hd).transpose(0, 1)
        q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
        k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=0)  # query head j reads kv head j // (nh/nkv)
        v = v.repeat_interleave(nh // nkv, dim=0)
        att = torch.softmax(q @ k.transpose(1, 2) * hd ** -0.5 + mask, dim=-1)
        o = (att @ v).transpose(0, 1).reshape(T, nh * hd)
        x = x + o @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = h @ w[p + "mlp.gate_proj.weight"].T
        u = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(g) * u) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T


def main():
    torch.set_num_threads(1)
    for job in json.load(open(sys.argv[1])):
        dtype = {"float32": torch.float32, "float64": torch.float64}[job["dtype"]]
        with torch.no_grad():
            logits = forward(job["folder"], dtype, job["tokens"])
        vals = logits.to(torch.float64).flatten().tolist()
        with open(job["out"], "wb") as f:
            f.write(struct.pack("<%dd" % len(vals), *vals))


if __name__ == "__main__":
    main()
