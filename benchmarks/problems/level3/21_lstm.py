import torch
import torch.nn as nn


class Model(nn.Module):
    """A multi-layer LSTM (nn.LSTM, batch first, zero initial states) and a linear layer on the last time step's
    output of the top layer.

    torch.compile does not trace nn.LSTM (torch._dynamo.config.allow_rnn is off by default): the recurrence runs
    as the eager (cuDNN) LSTM around the compiled graph(s), a graph break.
    """

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1, :])


batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_layers = 6
output_size = 10
dropout = 0.0
# eager ~ 10 ms (estimate, not yet measured): 6 layers x 512 sequential steps, each a (10 x 256) x (256 x 1024)
# recurrent GEMM and the gates (cuDNN persistent or per-step kernels, latency-bound), 30 GFLOP in all.
# Input 2.6 MB, parameters 12 MB.

def get_inputs():
    return [torch.randn(batch_size, sequence_length, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
