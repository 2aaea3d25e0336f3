# Makes model.onnx and the cases x<k>.npy -> z<k>.npy (PyTorch's outputs) that
# tests/frontend/onnx_control_flow_test.cc compiles and checks. Run with Debian's python3 (PyTorch
# 1.13): /usr/bin/python3 generate.py. The test does not need PyTorch: the files are committed.
import numpy as np
import torch

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = x
        steps = 0
        # A data-dependent loop: until the activations' norm passes a threshold (ONNX Loop, with
        # an If in its body for the second half of the condition).
        while bool(y.abs().sum() < 20.0) and steps < 16:
            y = torch.tanh(self.lin(y)) * 2.0 + y
            steps += 1
        # A data-dependent branch (ONNX If).
        if bool(y.mean() > 0):
            z = torch.relu(y) * 3.0
        else:
            z = y - 1.0
        return z


m = torch.jit.script(Net().eval())
x0 = torch.randn(2, 4) * 0.1
torch.onnx.export(m, (x0,), "model.onnx", input_names=["x"], output_names=["z"],
                  opset_version=13)
cases = [
    x0,  # several iterations, then the else branch
    -torch.ones(2, 4) * 3,  # no iteration (norm 24), else branch
    torch.full((2, 4), 0.5),
    torch.tensor([[0.3, -0.2, 0.1, 0.4], [0.2, 0.1, -0.3, 0.2]]),
    torch.ones(2, 4) * 3,  # no iteration, then branch
]
with torch.no_grad():
    for k, x in enumerate(cases):
        np.save(f"x{k}.npy", x.numpy())
        np.save(f"z{k}.npy", m(x).numpy())
