"""An independent torch forward of a dense Qwen3 model folder, for reference.go's cross-check.

Written from transformers' modeling_qwen3.py as facts (not its code): RMSNorm, q/k head norms
before rotate-half rotary embeddings, grouped-query attention under a causal mask scaled by
head_dim**-0.5, SwiGLU MLP, final norm, lm_head (tied to the embedding when the config says so).
Reads model.safetensors with struct/json and torch.frombuffer (the safetensors package may be
absent). Usage: torch_forward.py JOBS, a JSON list of {"folder", "dtype" (float32 or float64),
"tokens", "out", and optionally "adapter"} (one process for all, as importing torch takes
seconds); each job writes the logits of every position to its out as little-endian float64,
[positions, vocab].

An "adapter" is a PEFT LoRA adapter folder, read from PEFT's documented layout (not with peft):
adapter_config.json's r, lora_alpha, use_rslora and target_modules, and adapter_model.safetensors'
base_model.model.model.layers.{i}.{self_attn|mlp}.{module}.lora_A.weight [r, in] and lora_B.weight
[out, r]. Each targeted projection is applied unmerged, as PEFT's forward does:
x @ W.T + s * (x @ A.T) @ B.T with s = lora_alpha / r (lora_alpha / sqrt(r) with use_rslora).
"""
import json
import math
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


def read_adapter(folder, dtype):
    if folder is None:
        return None, 0.0
    acfg = json.load(open(os.path.join(folder, "adapter_config.json")))
    assert acfg["peft_type"] == "LORA" and not acfg.get("use_dora") and acfg.get("bias", "none") == "none"
    r, alpha = acfg["r"], acfg["lora_alpha"]
    s = alpha / math.sqrt(r) if acfg.get("use_rslora") else alpha / r
    t = {k: v.to(dtype) for k, v in read_safetensors(os.path.join(folder, "adapter_model.safetensors")).items()}
    return {"targets": set(acfg["target_modules"]), "tensors": t}, s


def forward(folder, dtype, tokens, adapter_folder=None):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    w = {k: v.to(dtype) for k, v in read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    adapter, scale = read_adapter(adapter_folder, dtype)

    def linear(x, i, parent, module):
        y = x @ w["model.layers.%d.%s.%s.weight" % (i, parent, module)].T
        if adapter is not None and module in adapter["targets"]:
            key = "base_model.model.model.layers.%d.%s.%s." % (i, parent, module)
            a, b = adapter["tensors"][key + "lora_A.weight"], adapter["tensors"][key + "lora_B.weight"]
            y = y + scale * ((x @ a.T) @ b.T)
        return y

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
        q = linear(h, i, "self_attn", "q_proj").view(T, nh, hd).transpose(0, 1)
        k = linear(h, i, "self_attn", "k_proj").view(T, nkv, hd).transpose(0, 1)
        v = linear(h, i, "self_attn", "v_proj").view(T, nkv, hd).transpose(0, 1)
        q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
        k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // nkv, dim=0)  # query head j reads kv head j // (nh/nkv)
        v = v.repeat_interleave(nh // nkv, dim=0)
        att = torch.softmax(q @ k.transpose(1, 2) * hd ** -0.5 + mask, dim=-1)
        o = (att @ v).transpose(0, 1).reshape(T, nh * hd)
        x = x + linear(o, i, "self_attn", "o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        g = linear(h, i, "mlp", "gate_proj")
        u = linear(h, i, "mlp", "up_proj")
        x = x + linear(torch.nn.functional.silu(g) * u, i, "mlp", "down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return x @ head.T


def main():
    torch.set_num_threads(1)
    for job in json.load(open(sys.argv[1])):
        dtype = {"float32": torch.float32, "float64": torch.float64}[job["dtype"]]
        with torch.no_grad():
            logits = forward(job["folder"], dtype, job["tokens"], job.get("adapter"))
        vals = logits.to(torch.float64).flatten().tolist()
        with open(job["out"], "wb") as f:
            f.write(struct.pack("<%dd" % len(vals), *vals))


if __name__ == "__main__":
    main()
