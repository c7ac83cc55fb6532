"""torch.distributions as RL and VAE code uses it (only `torch` renamed to `ember`):
a REINFORCE policy on a 3-armed bandit, and a VAE-style reparameterised KL term.
Prints one line per check; exits non-zero if learning failed."""
import ember as torch
import ember.nn as nn
import ember.nn.functional as F
from ember.distributions import Categorical, Independent, Normal, kl_divergence

torch.manual_seed(0)

# REINFORCE: arm 2 pays most; the policy must learn to pick it
rewards = torch.tensor([0.1, 0.3, 1.0])
policy = nn.Linear(1, 3)
opt = torch.optim.Adam(policy.parameters(), lr=0.1)
obs = torch.ones(64, 1)
for _ in range(60):
    dist = Categorical(logits=policy(obs))
    actions = dist.sample()
    r = rewards[actions]
    loss = -(dist.log_prob(actions) * (r - r.mean())).mean() - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
probs = F.softmax(policy(torch.ones(1, 1)), dim=-1)[0]
print(f"reinforce p(best arm) {probs[2].item():.2f}")
assert probs[2].item() > 0.9, probs

# VAE-style: q(z|x) = N(mu, sigma), z = q.rsample(), KL(q || N(0, 1)) pulls q to the prior
enc = nn.Linear(4, 4)
opt = torch.optim.SGD(enc.parameters(), lr=0.05)
x = torch.randn(32, 4)
for _ in range(200):
    h = enc(x)
    mu, log_sigma = h[:, :2], h[:, 2:]
    q = Independent(Normal(mu, log_sigma.exp()), 1)
    prior = Independent(Normal(torch.zeros_like(mu), torch.ones_like(mu)), 1)
    z = q.rsample()
    loss = kl_divergence(q, prior).mean() + 0.0 * z.sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"vae kl {loss.item():.3f} z {tuple(z.shape)} log_prob {tuple(q.log_prob(z).shape)}")
assert loss.item() < 0.1 and tuple(z.shape) == (32, 2)
