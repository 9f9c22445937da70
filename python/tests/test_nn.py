"""kiln.nn from Python: native layers, Python modules, training, files, the data loader."""

import numpy as np
import pytest

import kiln
import kiln.nn as nn


class Regression(nn.Module):
    def __init__(self):
        self.w = nn.Parameter("w", kiln.zeros(3, 1))
        self.b = nn.Parameter("b", kiln.zeros(1))

    def forward(self, x):
        return x @ self.w + self.b


def test_a_python_module_trains():
    kiln.manual_seed(0)
    model = Regression()
    assert [n for n, _ in model.named_parameters()] == ["w", "b"]
    x = kiln.rand(64, 3)
    y = x @ kiln.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    opt = nn.SGD(model.parameters(), lr=0.5)
    for _ in range(300):
        with kiln.gradient_context():
            loss = nn.mse_loss(model(x), y)
        opt.step(loss)
    assert loss.item() < 1e-4
    np.testing.assert_allclose(model.w.value.numpy().ravel(), [1.0, -2.0, 0.5], atol=2e-2)
    assert opt.steps == 300


def test_sequential_of_native_layers_has_pytorchs_names():
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(4 * 4 * 4, 10))
    assert [n for n, _ in model.named_parameters()] == [
        "0.weight", "0.bias", "4.weight", "4.bias"]
    out = model(kiln.rand(2, 1, 8, 8))
    assert out.shape == (2, 10)
    model.eval()
    assert not model[0].training
    model.train()
    assert model[0].training


def test_backward_then_step_with_adam():
    kiln.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))
    opt = nn.Adam(model.parameters(), lr=1e-2)
    x = kiln.rand(16, 4)
    y = kiln.tensor([i % 3 for i in range(16)])
    losses = []
    for _ in range(60):
        opt.zero_grad()
        with kiln.gradient_context():
            loss = nn.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.8


def test_save_and_load(tmp_path):
    kiln.manual_seed(2)
    a = nn.Sequential(nn.Linear(3, 2))
    path = str(tmp_path / "model.kiln")
    a.save(path)
    kiln.manual_seed(3)
    b = nn.Sequential(nn.Linear(3, 2))
    assert a[0].weight.value.tolist() != b[0].weight.value.tolist()
    b.load(path)
    assert a[0].weight.value.tolist() == b[0].weight.value.tolist()
    b.load_state_dict({k: np.zeros(v.shape) for k, v in a.state_dict().items()})
    assert b[0].weight.value.tolist() == [[0.0] * 3] * 2
    with pytest.raises(kiln.Error):
        nn.Sequential(nn.Linear(4, 2)).load(path)


def test_data_loader_over_numpy_arrays():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    y = np.arange(10)
    loader = kiln.data.DataLoader([x, y], batch_size=4, shuffle=True, seed=5)
    assert len(loader) == 3
    epochs = []
    for _ in range(2):
        seen = []
        for bx, by in loader:
            assert bx.shape[1] == 1
            np.testing.assert_array_equal(bx.numpy()[:, 0], by.numpy())
            seen.extend(by.tolist())
        assert sorted(seen) == list(range(10))
        epochs.append(seen)
    assert epochs[0] != epochs[1]  # reshuffled per epoch
    with pytest.raises(kiln.Error):
        kiln.data.DataLoader([x, y[:5]], batch_size=2)


def test_checkpoints_resume_exactly(tmp_path):
    def train(model, opt, steps, first):
        for s in range(first, first + steps):
            kiln.manual_seed(100 + s)
            x = kiln.rand(8, 4)
            with kiln.gradient_context():
                loss = nn.cross_entropy(model(x), kiln.tensor([s % 3] * 8))
            opt.step(loss)

    def make():
        return nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))

    kiln.manual_seed(7)
    model = make()
    opt = nn.Adam(model.parameters(), lr=1e-2)
    train(model, opt, 3, 0)
    path = str(tmp_path / "ckpt.safetensors")
    nn.save_checkpoint(model, opt, path, extra={"epoch": kiln.tensor([3])})
    train(model, opt, 3, 3)

    kiln.manual_seed(8)
    resumed = make()
    resumed_opt = nn.Adam(resumed.parameters(), lr=1e-2)
    extra = nn.load_checkpoint(resumed, resumed_opt, path)
    assert extra["epoch"].tolist() == [3]
    train(resumed, resumed_opt, 3, 3)
    for (n, a), (_, b) in zip(model.named_parameters(), resumed.named_parameters()):
        assert a.value.tolist() == b.value.tolist(), n


def test_safetensors_round_trip(tmp_path):
    path = str(tmp_path / "t.safetensors")
    kiln.save_safetensors(path, {"a": np.arange(4, dtype=np.float32), "b": kiln.ones(2, 2)})
    back = kiln.load_safetensors(path)
    assert list(back) == ["a", "b"]
    assert back["a"].tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(kiln.Error):
        kiln.load_safetensors(str(tmp_path / "missing.safetensors"))


def test_a_training_step_matches_pytorch():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    x = np.random.default_rng(1).standard_normal((16, 6)).astype(np.float32)
    y = np.arange(16) % 4
    tmodel = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 4))
    kmodel = nn.Sequential(nn.Linear(6, 12), nn.Tanh(), nn.Linear(12, 4))
    kmodel.load_state_dict({k: v.detach().numpy() for k, v in tmodel.state_dict().items()})
    topt = torch.optim.Adam(tmodel.parameters(), lr=1e-2)
    kopt = nn.Adam(kmodel.parameters(), lr=1e-2)
    for _ in range(3):
        topt.zero_grad()
        tloss = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x)), torch.from_numpy(y))
        tloss.backward()
        topt.step()
        with kiln.gradient_context():
            kloss = nn.cross_entropy(kmodel(kiln.tensor(x)), kiln.tensor(y))
        kopt.step(kloss)
        assert kloss.item() == pytest.approx(tloss.item(), rel=1e-5)
    for name, p in kmodel.named_parameters():
        np.testing.assert_allclose(np.asarray(p.value), tmodel.state_dict()[name].numpy(),
                                   rtol=1e-5, atol=1e-6, err_msg=name)


def test_schedules_follow_pytorchs_rates():
    model = nn.Sequential(nn.Linear(2, 1))
    opt = nn.SGD(model.parameters(), lr=1.0)
    sched = nn.StepLR(opt, step_size=2, gamma=0.5)
    rates = []
    for _ in range(5):
        rates.append(opt.lr)
        sched.step()
    assert rates == [1.0, 1.0, 0.5, 0.5, 0.25]
    opt2 = nn.SGD(model.parameters(), lr=0.1)
    cosine = nn.CosineAnnealingLR(opt2, T_max=10, eta_min=0.0, warmup=2)
    assert opt2.lr == 0.0  # the warm-up's first step, as PyTorch's LinearLR(start_factor=0)
    cosine.step()
    assert opt2.lr == pytest.approx(0.05)


def test_batch_norm_buffers_are_not_parameters():
    bn = nn.BatchNorm2d(3)
    assert [n for n, _ in bn.named_parameters()] == ["weight", "bias"]
    assert [n for n, _ in bn.named_buffers()][:2] == ["running_mean", "running_var"]
    y = bn(kiln.rand(4, 3, 2, 2))
    assert y.shape == (4, 3, 2, 2)


def test_state_dict_holds_buffers():
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2))
    names = list(model.state_dict())
    assert names[:4] == ["0.weight", "0.bias", "1.weight", "1.bias"]
    assert "1.running_mean" in names and "1.running_var" in names


def test_a_model_moved_to_a_device_trains_there():
    kiln.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)).to("reference")
    x = kiln.rand(8, 3).to("reference")
    y = kiln.rand(8, 1).to("reference")
    assert x.device == "reference" and x.is_placed
    opt = nn.SGD(model.parameters(), lr=0.1)
    with kiln.gradient_context():
        loss = nn.mse_loss(model(x), y)
    assert loss.device == "reference"
    opt.step(loss)
    assert all(p.value.device == "reference" for p in model.parameters())
    with pytest.raises(kiln.Error, match="on cpu"):
        model(kiln.rand(8, 3).to("cpu"))
    assert not kiln.rand(2).is_placed
