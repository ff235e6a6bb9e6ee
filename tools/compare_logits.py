#!/usr/bin/python3
"""Agreement of two `qinfer logits` outputs (float32 LE, [n_ids, vocab]): how far a
quantized model's next-token distributions are from the reference model's.

usage: /usr/bin/python3 tools/compare_logits.py REF.f32 TEST.f32 VOCAB
Prints per-file rows, top-1 agreement, mean and max KL(ref || test) in nats, the
mean cosine similarity of the logit rows and the max |Δ logit|.
"""
import sys

import numpy as np


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    vocab = int(sys.argv[3])
    a = np.fromfile(sys.argv[1], dtype="<f4").astype(np.float64)
    b = np.fromfile(sys.argv[2], dtype="<f4").astype(np.float64)
    if a.size != b.size or a.size % vocab:
        sys.exit(f"sizes differ or are not multiples of {vocab}: {a.size} and {b.size} floats")
    a = a.reshape(-1, vocab)
    b = b.reshape(-1, vocab)

    def log_softmax(x):
        m = x.max(axis=1, keepdims=True)
        return x - m - np.log(np.exp(x - m).sum(axis=1, keepdims=True))

    la, lb = log_softmax(a), log_softmax(b)
    kl = (np.exp(la) * (la - lb)).sum(axis=1)
    cos = (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))
    top1 = (a.argmax(axis=1) == b.argmax(axis=1)).mean()
    print(f"rows {a.shape[0]}  top1_agree {top1:.4f}  kl_mean {kl.mean():.6g}  kl_max {kl.max():.6g}  "
          f"cos_mean {cos.mean():.6f}  max_abs_diff {np.abs(a - b).max():.6g}")


if __name__ == "__main__":
    main()
