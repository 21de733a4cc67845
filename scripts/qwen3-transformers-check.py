"""The model's oracle in make gpu-check (gpu/qwen3 TestGPUCheck): loads the folder TestGPUCheck
wrote (DIR/model, a Hugging Face Qwen3 folder; DIR/adapter, a PEFT LoRA folder) with transformers
and peft, computes the logits of DIR/prompt.json at every position with the adapter off and on,
and prints as JSON the largest |difference| from ours (DIR/go_logits.bin: float64 little-endian,
[2, positions, vocab], adapter off then on). Exits 77 where transformers or peft is absent."""
import json
import os
import struct
import sys

try:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
except ImportError:
    sys.exit(77)


def main(root):
    prompt = json.load(open(os.path.join(root, "prompt.json")))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as the graphs ask
    model = AutoModelForCausalLM.from_pretrained(os.path.join(root, "model"), torch_dtype=torch.float32).to(device)
    model.eval()
    ids = torch.tensor([prompt], device=device)
    with torch.no_grad():
        base = model(ids).logits[0].double().cpu()
        adapted_model = PeftModel.from_pretrained(model, os.path.join(root, "adapter")).to(device)
        adapted_model.eval()
        adapted = adapted_model(ids).logits[0].double().cpu()
    raw = open(os.path.join(root, "go_logits.bin"), "rb").read()
    n, vocab = base.shape
    ours = torch.tensor(struct.unpack("<%dd" % (len(raw) // 8), raw), dtype=torch.float64).reshape(2, n, vocab)
    print(json.dumps({
        "BaseMaxAbs": float((ours[0] - base).abs().max()),
        "AdapterMaxAbs": float((ours[1] - adapted).abs().max()),
        "transformers": __import__("transformers").__version__,
        "peft": __import__("peft").__version__,
        "torch": torch.__version__,
        "device": device,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
