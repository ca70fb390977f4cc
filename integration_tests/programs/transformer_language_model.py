"""A word-level Transformer language model (causal self-attention) on a small synthetic corpus.

A plain PyTorch script in the shape of the word-language-model example's
Transformer: a sinusoidal PositionalEncoding kept in a buffer, an
`nn.TransformerEncoder` over (sequence, batch) inputs with the causal mask of
`nn.Transformer.generate_square_subsequent_mask`, log_softmax + NLLLoss, the
corpus batchified into columns and cut into bptt-long chunks, plain SGD
written by hand (`p.data.add_(p.grad, alpha=-lr)`) after gradient clipping,
and the learning rate divided by 4 when the validation loss stops improving.
Dropout is 0 and the weights start from fixed values: the training is
deterministic. Then it generates text, sampling each next word with
`torch.multinomial`, as the example's generate script does. Prints one JSON
line: the loss of every step, the validation loss and learning rate of every
epoch, the test perplexity, the generated words and the fraction of their
pairs seen in the corpus.
"""

import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

WORDS = ["<eos>", "alice", "bob", "sees", "likes", "helps", "red", "green", "apples", "pears", "and", "too"]


def corpus(sentences: int, offset: int) -> torch.Tensor:
    index = {w: i for i, w in enumerate(WORDS)}
    ids = []
    for s in range(offset, offset + sentences):
        subject, verb = ["alice", "bob"][s % 2], ["sees", "likes", "helps"][(s // 2) % 3]
        colour, fruit = ["red", "green"][(s // 3) % 2], ["apples", "pears"][(s // 5) % 2]
        sentence = [subject, verb, colour, fruit] + (["and", ["bob", "alice"][s % 2], "too"] if s % 4 == 0 else [])
        ids += [index[w] for w in sentence + ["<eos>"]]
    return torch.tensor(ids, dtype=torch.long)


def batchify(data: torch.Tensor, bsz: int) -> torch.Tensor:
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def get_batch(source: torch.Tensor, i: int, bptt: int):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i : i + seq_len], source[i + 1 : i + 1 + seq_len].reshape(-1)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 500) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0), :])


class TransformerModel(nn.Module):
    def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.src_mask = None
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        encoder_layers = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            self.src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        src = self.pos_encoder(self.encoder(src) * math.sqrt(self.ninp))
        output = self.transformer_encoder(src, self.src_mask)
        return F.log_softmax(self.decoder(output), dim=-1)


def deterministic_(model: nn.Module) -> None:
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            ramp = torch.arange(p.numel(), dtype=torch.float32)
            if "norm" in name:
                p.copy_(torch.ones_like(p) if name.endswith("weight") else torch.zeros_like(p))
            elif name.endswith("bias"):
                p.copy_(torch.cos(ramp * 0.5 + i) * 0.02)
            else:
                p.copy_((torch.sin(ramp * 1.07 + 0.3 * i) / math.sqrt(p.shape[-1])).reshape(p.shape))


def evaluate(model: nn.Module, source: torch.Tensor, criterion, bptt: int) -> float:
    model.eval()
    total = 0.0
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, bptt):
            data, targets = get_batch(source, i, bptt)
            total += len(data) * criterion(model(data).view(-1, len(WORDS)), targets).item()
    return total / (len(source) - 1)


def main() -> None:
    bptt = 12
    train_data = batchify(corpus(80, 0), 4)
    val_data, test_data = batchify(corpus(16, 500), 2), batchify(corpus(16, 900), 2)
    model = TransformerModel(len(WORDS), ninp=16, nhead=2, nhid=32, nlayers=2)
    deterministic_(model)
    criterion = nn.NLLLoss()
    lr, best_val_loss = 0.5, None
    losses, val_losses, lrs = [], [], []
    for _epoch in range(4):
        model.train()
        for i in range(0, train_data.size(0) - 1, bptt):
            data, targets = get_batch(train_data, i, bptt)
            model.zero_grad()
            loss = criterion(model(data).view(-1, len(WORDS)), targets)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            for p in model.parameters():
                p.data.add_(p.grad, alpha=-lr)
            losses.append(loss.item())
        val_loss = evaluate(model, val_data, criterion, bptt)
        val_losses.append(val_loss)
        lrs.append(lr)
        if best_val_loss is None or val_loss < best_val_loss:
            best_val_loss = val_loss
        else:
            lr /= 4.0
    test_loss = evaluate(model, test_data, criterion, bptt)
    words, known = generate(model, start="alice", count=30, temperature=0.7)
    print(
        json.dumps(
            {
                "losses": losses,
                "val_losses": val_losses,
                "lrs": lrs,
                "test_ppl": math.exp(test_loss),
                "generated": words,
                "known_bigrams": known,
            }
        )
    )


def generate(model: nn.Module, start: str, count: int, temperature: float):
    """Samples `count` words after `start` (torch.multinomial over the softmax at `temperature`); also the
    fraction of the generated word pairs that occur in the training corpus."""
    torch.manual_seed(3)
    model.eval()
    tokens = torch.tensor([[WORDS.index(start)]])  # (sequence, batch=1)
    words = []
    with torch.no_grad():
        for _ in range(count):
            output = model(tokens)
            word_weights = output[-1].squeeze().div(temperature).exp()
            word_idx = torch.multinomial(word_weights, 1)[0]
            tokens = torch.cat([tokens, word_idx.view(1, 1)], 0)
            words.append(WORDS[word_idx])
    ids = corpus(80, 0).tolist()
    seen = set(zip(ids, ids[1:], strict=False))
    generated = tokens.view(-1).tolist()
    pairs = list(zip(generated, generated[1:], strict=False))
    return words, sum(pair in seen for pair in pairs) / len(pairs)


if __name__ == "__main__":
    main()
