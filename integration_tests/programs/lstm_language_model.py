"""A word-level LSTM language model on a tiny synthetic corpus (next-token prediction).

A plain PyTorch script. Prints one JSON line: the training loss of every step
and the final perplexity on the corpus.
"""

import json
import math

import torch
import torch.nn as nn

VOCAB = ["the", "cat", "dog", "sat", "ran", "on", "mat", "log", "a", "big", "small", "."]


def corpus_ids() -> list[int]:
    # A deterministic corpus with structure an LSTM can learn.
    words = []
    subjects, verbs, places, sizes = ["cat", "dog"], ["sat", "ran"], ["mat", "log"], ["big", "small"]
    for i in range(60):
        words += [
            "the",
            sizes[i % 2],
            subjects[(i // 2) % 2],
            verbs[(i // 3) % 2],
            "on",
            "a",
            places[(i // 5) % 2],
            ".",
        ]
    index = {w: i for i, w in enumerate(VOCAB)}
    return [index[w] for w in words]


class LanguageModel(nn.Module):
    def __init__(self, vocab: int, embed: int = 16, hidden: int = 32) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=1, batch_first=True)
        self.decoder = nn.Linear(hidden, vocab)

    def forward(self, tokens, state=None):
        out, state = self.lstm(self.embedding(tokens), state)
        return self.decoder(out), state


def deterministic_(model: nn.Module) -> None:
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            ramp = torch.arange(p.numel(), dtype=torch.float32)
            scale = 0.5 if "embedding" in name else 1.0 / math.sqrt(32)
            p.copy_((torch.cos(ramp * 1.31 + 0.5 * i) * scale).reshape(p.shape))


def batches(ids: list[int], seq_len: int, batch: int):
    data = torch.tensor(ids, dtype=torch.long)
    n = (len(data) - 1) // (seq_len * batch) * seq_len * batch
    inputs = data[:n].view(batch, -1)
    targets = data[1 : n + 1].view(batch, -1)
    for start in range(0, inputs.size(1), seq_len):
        yield inputs[:, start : start + seq_len], targets[:, start : start + seq_len]


def main() -> None:
    ids = corpus_ids()
    model = LanguageModel(len(VOCAB))
    deterministic_(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _epoch in range(4):
        state = None
        for inputs, targets in batches(ids, seq_len=12, batch=4):
            if state is not None:
                state = tuple(s.detach() for s in state)  # truncated backpropagation through time
            logits, state = model(inputs, state)
            loss = criterion(logits.reshape(-1, len(VOCAB)), targets.reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
            losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        data = torch.tensor(ids, dtype=torch.long).unsqueeze(0)
        logits, _ = model(data[:, :-1])
        nll = nn.functional.cross_entropy(logits.reshape(-1, len(VOCAB)), data[0, 1:]).item()
    print(json.dumps({"losses": losses, "perplexity": math.exp(nll)}))


if __name__ == "__main__":
    main()
