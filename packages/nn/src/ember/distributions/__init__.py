"""ember.distributions: probability distributions with sampling, reparameterised
(differentiable) sampling, log densities, entropies and KL divergences, the counterpart
of torch.distributions (in the ember-nn package: it needs autograd).

    import ember.distributions as D
    pi = D.Categorical(logits=policy(obs))
    action = pi.sample()
    loss = -(pi.log_prob(action) * advantage).mean() - 0.01 * pi.entropy().mean()

    q = D.Normal(mu, sigma)                # a VAE's posterior
    z = q.rsample()                        # gradients flow to mu and sigma
    kl = D.kl_divergence(q, D.Normal(0.0, 1.0)).sum()

Distributions: Normal, Uniform, Bernoulli, Categorical, OneHotCategorical, Gamma, Beta,
Dirichlet, MultivariateNormal, Independent. Everything is composed from ember ops (any
device); lgamma, digamma and erfinv, which ember's op table lacks, and a small Cholesky
factorisation for MultivariateNormal are written over ember ops here (_special,
_linalg). The Gamma family samples with Marsaglia-Tsang and differentiates by implicit
reparameterisation (see ember.distributions.gamma).
"""
from ember.distributions import constraints
from ember.distributions.bernoulli import Bernoulli
from ember.distributions.categorical import Categorical, OneHotCategorical
from ember.distributions.distribution import Distribution
from ember.distributions.gamma import Beta, Dirichlet, Gamma
from ember.distributions.independent import Independent
from ember.distributions.kl import kl_divergence, register_kl
from ember.distributions.multivariate_normal import MultivariateNormal
from ember.distributions.normal import Normal
from ember.distributions.uniform import Uniform

__all__ = ["Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Gamma",
           "Independent", "MultivariateNormal", "Normal", "OneHotCategorical", "Uniform",
           "constraints", "kl_divergence", "register_kl"]
