"""strata's registered models (models/mlp.cpp, cnn.cpp, resnet.cpp, gpt.cpp)
rebuilt in PyTorch layer for layer, with the same initialisation families:
PyTorch's own defaults for Linear/Conv2d/BatchNorm (kaiming-uniform a=sqrt(5),
as strata's modules), GPT-2's N(0, 0.02) for the GPT. Built from the `model`
section of a resolved strata config (strata-train --dry-run)."""
import math

import torch
from torch import nn
import torch.nn.functional as F


def mlp(m, in_shape):
    layers, width = [nn.Flatten(1)], math.prod(in_shape)
    for h in m["hidden"]:
        layers += [nn.Linear(width, h), nn.ReLU()]
        if m["dropout"] > 0:
            layers.append(nn.Dropout(m["dropout"]))
        width = h
    layers.append(nn.Linear(width, m["num_classes"]))
    return nn.Sequential(*layers)


def cnn(m, in_shape):
    c, h, w = in_shape
    layers = []
    for out in m["channels"]:
        layers += [nn.Conv2d(c, out, 3, 1, 1, bias=False), nn.BatchNorm2d(out), nn.ReLU(), nn.MaxPool2d(2, 2)]
        c, h, w = out, h // 2, w // 2
    layers.append(nn.Flatten(1))
    width = c * h * w
    for hid in m["hidden"]:
        layers += [nn.Linear(width, hid), nn.ReLU()]
        if m["dropout"] > 0:
            layers.append(nn.Dropout(m["dropout"]))
        width = hid
    layers.append(nn.Linear(width, m["num_classes"]))
    return nn.Sequential(*layers)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        nn.init.zeros_(self.bn2.weight)  # zero-init residual, as models/resnet.cpp
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + (self.downsample(x) if self.downsample is not None else x))


class ResNet(nn.Module):
    def __init__(self, m, in_shape):
        super().__init__()
        c = m["channels"][0]
        self.conv1 = nn.Conv2d(in_shape[0], c, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        stages = []
        for i, (out, n) in enumerate(zip(m["channels"], m["blocks"])):
            blocks = []
            for j in range(n):
                blocks.append(BasicBlock(c, out, 2 if i > 0 and j == 0 else 1))
                c = out
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.dropout = nn.Dropout(m["dropout"]) if m["dropout"] > 0 else nn.Identity()
        self.fc = nn.Linear(c, m["num_classes"])

    def forward(self, x):
        y = self.stages(F.relu(self.bn1(self.conv1(x))))
        return self.fc(self.dropout(y.mean((2, 3))))


class Attention(nn.Module):
    def __init__(self, width, heads, dropout):
        super().__init__()
        self.heads, self.dropout = heads, dropout
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.drop = nn.Dropout(dropout)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0.0)
        return self.drop(self.c_proj(y.transpose(1, 2).reshape(b, t, c)))


class Block(nn.Module):
    def __init__(self, m):
        super().__init__()
        w = m["width"]
        self.ln_1 = nn.LayerNorm(w)
        self.attn = Attention(w, m["heads"], m["dropout"])
        self.ln_2 = nn.LayerNorm(w)
        self.c_fc = nn.Linear(w, 4 * w)
        self.c_proj = nn.Linear(4 * w, w)
        self.drop = nn.Dropout(m["dropout"])

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")))


class Gpt(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.wte = nn.Embedding(m["vocab_size"], m["width"])
        self.wpe = nn.Embedding(m["context"], m["width"])
        self.drop = nn.Dropout(m["dropout"])
        self.h = nn.Sequential(*[Block(m) for _ in range(m["layers"])])
        self.ln_f = nn.LayerNorm(m["width"])
        resid_std = 0.02 / math.sqrt(2 * m["layers"])
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() == 2:  # linear weights and the two embeddings
                nn.init.normal_(p, 0.0, resid_std if name.endswith("c_proj.weight") else 0.02)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln_f(self.h(self.drop(self.wte(ids) + self.wpe(pos))))
        return F.linear(x, self.wte.weight)  # tied head


def build(cfg, in_shape):
    m = cfg["model"]
    name = m["name"]
    if name == "mlp":
        return mlp(m, in_shape)
    if name == "cnn":
        return cnn(m, in_shape)
    if name == "resnet":
        return ResNet(m, in_shape)
    if name == "gpt":
        return Gpt(m)
    raise SystemExit(f"peer_models: no PyTorch peer for model.name '{name}'")


def no_decay_names(model):
    """What strata's optimizer.decay_groups exempts (nn/optim/param_groups.cpp):
    the parameters of Embedding, LayerNorm and BatchNorm modules, and every bias."""
    out = set()
    for mod_name, mod in model.named_modules():
        if isinstance(mod, (nn.Embedding, nn.LayerNorm, nn.BatchNorm2d)):
            out |= {f"{mod_name}.{n}" if mod_name else n for n, _ in mod.named_parameters()}
    out |= {n for n, _ in model.named_parameters() if n.rsplit(".", 1)[-1] == "bias"}
    return out
