"""Trains a GRU + Bahdanau seq2seq on the copy task from Python, then reports greedy token
accuracy (EOS included) on fresh examples, as `attn eval` does.

  PYTHONPATH=build/python /usr/bin/python3 python/examples/copy_task.py [STEPS] [CHECKPOINT]

With CHECKPOINT, the trained model is saved there (attn.save), for `attn eval --model`.
"""
import sys

import numpy as np

import attn

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 600
model = attn.models.Seq2Seq('{"attention": "bahdanau", "hidden": 128, "emb": 64, "seed": 1}')
train = attn.data.TaskGenerator("copy", 5, 20, seed=1)
opt = attn.train.Adam(model.parameters(), lr=3e-3)
for step in range(1, steps + 1):
    loss = model.loss(train.next(64))
    attn.backward(loss)
    attn.train.clip_grad_norm(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
    if step % 100 == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)

if len(sys.argv) > 2:
    attn.save(model, sys.argv[2], task="copy", min_len=5, max_len=20, step=steps)

model.eval()
test = attn.data.TaskGenerator("copy", 5, 20, seed=2)
for length in (10, 20):
    batch = test.fixed_length(200, length)
    tokens, _ = model.greedy(batch.src, batch.src_lengths, length + 1)
    want = batch.tgt_out.numpy()
    correct = sum(int(np.sum(np.array(row[:length + 1] + [-1] * (length + 1 - len(row))) == want[i, :length + 1]))
                  for i, row in enumerate(tokens))
    print(f"length {length}: token accuracy {100.0 * correct / (200 * (length + 1)):.1f} %")
