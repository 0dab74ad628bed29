"""task_losses_reference.py: reference values of the task heads' losses for
test/unit/test_task_heads.c, from PyTorch's own definitions:
nn.BCEWithLogitsLoss (a cross-encoder with one label, sentence-transformers'
CrossEncoder default) and ...ForQuestionAnswering's (CE(start) + CE(end)) / 2
over each row's real (unpadded) positions.  Prints the C initialisers the
test holds; run it with /usr/bin/python3 (torch)."""
import torch

torch.set_default_dtype(torch.float64)

# BCE with logits: sums and gradients of the sum
z = torch.tensor([-2.5, -0.3, 0.0, 0.7, 3.1, 40.0, -40.0], requires_grad=True)
y = torch.tensor([0.0, 1.0, 0.25, 1.0, 0.0, 1.0, 0.5])
bce = torch.nn.BCEWithLogitsLoss(reduction="sum")(z, y)
bce.backward()
print("bce_sum = %.12g" % bce.item())
print("bce_grad = {%s}" % ", ".join("%.12g" % v for v in z.grad.tolist()))

# spans: B = 2 rows of T = 4 tokens, logits (B, T, 2); row 1's last token is padding
logits = torch.tensor([[[0.3, -1.2], [1.5, 0.4], [-0.7, 2.2], [0.1, 0.0]],
                       [[2.0, 0.5], [-0.4, -0.9], [0.8, 1.7], [9.0, 9.0]]], requires_grad=True)
lens = [4, 3]
spans = [(1, 2), (0, 2)]
ce = torch.nn.CrossEntropyLoss(reduction="sum")
total = 0
for b in range(2):
    s = logits[b, :lens[b], 0].unsqueeze(0)
    e = logits[b, :lens[b], 1].unsqueeze(0)
    total = total + (ce(s, torch.tensor([spans[b][0]])) + ce(e, torch.tensor([spans[b][1]]))) / 2
total.backward()
print("span_sum = %.12g" % total.item())
print("span_grad = {%s}" % ", ".join("%.12g" % v for v in logits.grad.flatten().tolist()))
