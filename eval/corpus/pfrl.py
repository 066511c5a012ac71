"""pfrl: deep reinforcement learning (Preferred Networks) as its examples build agents' models:
DQN-family Q-functions (fully connected, NoisyNet, distributional) acting greedily and their
agents' Q-learning losses (DQN, CategoricalDQN), a recurrent DRQN Q-function stepped with its
LSTM state, PPO's Gaussian policy / value model with empirical observation normalization and
PPO's clipped loss, an A2C-style softmax policy acting, and the SAC / DDPG actor losses over
state-action Q-functions.

All models are built from their constructors with random weights and 32 hidden units; agents get
a replay buffer and an optimizer but are never run in an environment (no gym, no files).
Shapes: batch 2 -> 3 -> 4 (the agents' loss minibatches 4 -> 6 -> 8) of 5-dimensional
observations; 3 discrete actions or a 2-dimensional continuous action.
"""

from __future__ import annotations

import torch
from torch import nn

LIBRARY = "pfrl"
DIST = "pfrl==0.4.0"

OBS = 5
N_ACT = 3
A_DIM = 2
B = (2, 3, 4)
MB = (4, 6, 8)


def _obs(shape, n=None):
    gen = torch.Generator().manual_seed(10 + shape)
    return torch.randn(B[shape] if n is None else n, OBS, generator=gen)


def _exp_batch(shape, continuous=False):
    """A replay minibatch as pfrl.replay_buffer.batch_experiences makes it."""
    gen = torch.Generator().manual_seed(20 + shape)
    n = MB[shape]
    if continuous:
        action = torch.rand(n, A_DIM, generator=gen) * 2 - 1
    else:
        action = torch.randint(0, N_ACT, (n,), generator=gen)
    return {
        "state": torch.randn(n, OBS, generator=gen),
        "action": action,
        "reward": torch.randn(n, generator=gen),
        "next_state": torch.randn(n, OBS, generator=gen),
        "is_state_terminal": (torch.rand(n, generator=gen) < 0.2).float(),
        "discount": torch.full((n,), 0.99),
    }


def _dqn_agent(q_func, cls=None, **kw):
    import pfrl

    cls = cls or pfrl.agents.DQN
    opt = torch.optim.Adam(q_func.parameters(), lr=1e-3)
    rbuf = pfrl.replay_buffers.ReplayBuffer(capacity=100)
    explorer = pfrl.explorers.ConstantEpsilonGreedy(epsilon=0.1, random_action_func=lambda: 0)
    return cls(q_func, opt, rbuf, gamma=0.99, explorer=explorer, replay_start_size=16, minibatch_size=8, **kw)


def dqn_qfunc_greedy(shape=0):
    """A fully connected Q-function's DiscreteActionValue: greedy actions and max Q, as
    DQN.batch_act reads them (eval mode, no_grad)."""
    from pfrl.q_functions import FCStateQFunctionWithDiscreteAction

    torch.manual_seed(0)
    q_func = FCStateQFunctionWithDiscreteAction(OBS, N_ACT, n_hidden_channels=32, n_hidden_layers=2).eval()

    def act(obs):
        with torch.no_grad():
            av = q_func(obs)
            return av.greedy_actions, av.max

    return act, (_obs(shape),), {}


def dqn_agent_loss(shape=0):
    """DQN's Q-learning loss on a replay minibatch (Huber loss, target network, mean
    accumulation), as DQN.update computes it (training mode)."""
    import pfrl

    torch.manual_seed(0)
    q_func = nn.Sequential(nn.Linear(OBS, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, N_ACT),
                           pfrl.q_functions.DiscreteActionValueHead())
    agent = _dqn_agent(q_func, target_update_interval=100)
    agent.model.train()
    return agent._compute_loss, (_exp_batch(shape),), {}


def categorical_dqn_loss(shape=0):
    """CategoricalDQN (C51): a distributional fully connected Q-function over 11 atoms, its
    projected cross-entropy loss on a replay minibatch (training mode)."""
    import pfrl
    from pfrl.q_functions import DistributionalFCStateQFunctionWithDiscreteAction

    torch.manual_seed(0)
    q_func = DistributionalFCStateQFunctionWithDiscreteAction(OBS, N_ACT, n_atoms=11, v_min=-5.0, v_max=5.0,
                                                              n_hidden_channels=32, n_hidden_layers=2)
    agent = _dqn_agent(q_func, cls=pfrl.agents.CategoricalDQN, target_update_interval=100)
    agent.model.train()
    return agent._compute_loss, (_exp_batch(shape),), {}


def noisy_qfunc_loss(shape=0):
    """NoisyNet exploration: a Q-network whose linear layers `to_factorized_noisy`
    replaced (fresh noise every call), its TD regression loss (training mode)."""
    import pfrl

    torch.manual_seed(0)
    q_func = nn.Sequential(nn.Linear(OBS, 32), nn.ReLU(), nn.Linear(32, N_ACT),
                           pfrl.q_functions.DiscreteActionValueHead())
    pfrl.nn.to_factorized_noisy(q_func, sigma_scale=0.5)
    q_func.train()

    def loss_step(obs, actions, targets):
        av = q_func(obs)
        return nn.functional.smooth_l1_loss(av.evaluate_actions(actions), targets)

    gen = torch.Generator().manual_seed(30 + shape)
    actions = torch.randint(0, N_ACT, (B[shape],), generator=gen)
    return loss_step, (_obs(shape), actions, torch.randn(B[shape], generator=gen)), {}


def drqn_one_step(shape=0):
    """A DRQN: RecurrentSequential(Linear, ReLU, LSTM, Linear, DiscreteActionValueHead) stepped
    one observation at a time with `one_step_forward`, carrying its LSTM state (eval mode)."""
    import pfrl
    from pfrl.utils.recurrent import one_step_forward

    torch.manual_seed(0)
    q_func = pfrl.nn.RecurrentSequential(nn.Linear(OBS, 16), nn.ReLU(), nn.LSTM(16, 16), nn.Linear(16, N_ACT),
                                         pfrl.q_functions.DiscreteActionValueHead()).eval()

    def act(obs, state):
        with torch.no_grad():
            av, state = one_step_forward(q_func, obs, state)
            return av.greedy_actions, state

    n = B[shape]
    state = ((torch.zeros(1, n, 16), torch.zeros(1, n, 16)),)
    return act, (_obs(shape), state), {}


def ppo_gaussian_loss(shape=0):
    """PPO on a continuous-control task, as pfrl's MuJoCo example builds it: empirical observation
    normalization, a Branched(policy with GaussianHeadWithStateIndependentCovariance, value
    function) model, and PPO's clipped surrogate + value + entropy loss (`_lossfun`)."""
    import pfrl

    torch.manual_seed(0)
    obs_normalizer = pfrl.nn.EmpiricalNormalization(OBS, clip_threshold=5)
    policy = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, A_DIM),
                           pfrl.policies.GaussianHeadWithStateIndependentCovariance(
                               action_size=A_DIM, var_type="diagonal", var_func=lambda x: torch.exp(2 * x),
                               var_param_init=0))
    vf = nn.Sequential(nn.Linear(OBS, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))
    model = pfrl.nn.Branched(policy, vf)
    opt = torch.optim.Adam(model.parameters(), lr=3e-4, eps=1e-5)
    agent = pfrl.agents.PPO(model, opt, obs_normalizer=obs_normalizer, update_interval=64, minibatch_size=8,
                            epochs=1, clip_eps_vf=None, entropy_coef=0.01, standardize_advantages=True)
    agent.model.train()
    obs_normalizer.train()

    def loss_step(obs, actions, log_probs_old, vs_pred_old, advs, vs_teacher):
        obs = obs_normalizer(obs, update=True)
        distribs, vs_pred = model(obs)
        vs_pred = vs_pred.flatten()
        log_probs = distribs.log_prob(actions)
        entropy = distribs.entropy()
        return agent._lossfun(entropy, vs_pred, log_probs, vs_pred_old, log_probs_old, advs, vs_teacher)

    gen = torch.Generator().manual_seed(40 + shape)
    n = MB[shape]
    args = (torch.randn(n, OBS, generator=gen), torch.randn(n, A_DIM, generator=gen),
            torch.randn(n, generator=gen) - 2, torch.randn(n, generator=gen), torch.randn(n, generator=gen),
            torch.randn(n, generator=gen))
    return loss_step, args, {}


def a2c_softmax_act(shape=0):
    """An actor-critic with a SoftmaxCategoricalHead policy and a value head (Branched): sample
    actions, their log-probabilities, the entropy and the values (eval mode)."""
    import pfrl

    torch.manual_seed(0)
    model = pfrl.nn.Branched(
        nn.Sequential(nn.Linear(OBS, 32), nn.ReLU(), nn.Linear(32, N_ACT), pfrl.policies.SoftmaxCategoricalHead()),
        nn.Sequential(nn.Linear(OBS, 32), nn.ReLU(), nn.Linear(32, 1)),
    ).eval()

    def act(obs):
        with torch.no_grad():
            dist, v = model(obs)
            a = dist.sample()
            return a, dist.log_prob(a), dist.entropy(), v

    return act, (_obs(shape),), {}


def _squashed_diagonal_gaussian_head(x):
    """pfrl's SAC example head: a tanh-squashed diagonal Gaussian."""
    from torch import distributions

    mean, log_scale = torch.chunk(x, 2, dim=1)
    log_scale = torch.clamp(log_scale, -20.0, 2.0)
    var = torch.exp(log_scale * 2)
    base = distributions.Independent(distributions.Normal(loc=mean, scale=torch.sqrt(var)), 1)
    return distributions.transformed_distribution.TransformedDistribution(
        base, [distributions.transforms.TanhTransform(cache_size=1)])


def sac_actor_loss(shape=0):
    """SAC's policy loss as SoftActorCritic.update_policy_and_temperature computes it: a
    reparameterized tanh-Gaussian action (pfrl.nn.Lambda head), the smaller of two
    ConcatObsAndAction Q-functions and the TemperatureHolder's entropy term (training mode)."""
    import pfrl
    from pfrl.agents.soft_actor_critic import TemperatureHolder

    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(OBS, 32), nn.ReLU(), nn.Linear(32, A_DIM * 2),
                           pfrl.nn.Lambda(_squashed_diagonal_gaussian_head)).train()

    def make_q():
        return nn.Sequential(pfrl.nn.ConcatObsAndAction(), nn.Linear(OBS + A_DIM, 32), nn.ReLU(),
                             nn.Linear(32, 1)).train()

    q1, q2 = make_q(), make_q()
    temperature = TemperatureHolder(initial_log_temperature=0.0)

    def loss_step(obs):
        dist = policy(obs)
        actions = dist.rsample()
        log_prob = dist.log_prob(actions)
        q = torch.min(q1((obs, actions)), q2((obs, actions))).flatten()
        entropy_term = temperature() * log_prob[..., None]
        return torch.mean(entropy_term.flatten() - q)

    return loss_step, (_obs(shape),), {}


def ddpg_actor_loss(shape=0):
    """DDPG / TD3's actor loss: a deterministic policy bounded by tanh (BoundByTanh,
    DeterministicHead) through an FCSAQFunction critic (training mode)."""
    import pfrl
    from pfrl.q_functions import FCSAQFunction

    torch.manual_seed(0)
    policy = nn.Sequential(nn.Linear(OBS, 32), nn.ReLU(), nn.Linear(32, A_DIM),
                           pfrl.nn.BoundByTanh(low=torch.full((A_DIM,), -1.0), high=torch.full((A_DIM,), 1.0)),
                           pfrl.policies.DeterministicHead()).train()
    critic = FCSAQFunction(OBS, A_DIM, n_hidden_channels=32, n_hidden_layers=2).train()

    def loss_step(obs):
        onpolicy_actions = policy(obs).rsample()
        return -critic(obs, onpolicy_actions).mean()

    return loss_step, (_obs(shape),), {}


MODELS = {
    "pfrl_dqn_qfunc_greedy": ("eval", dqn_qfunc_greedy),
    "pfrl_dqn_agent_loss": ("train", dqn_agent_loss),
    "pfrl_categorical_dqn_loss": ("train", categorical_dqn_loss),
    "pfrl_noisy_qfunc_loss": ("train", noisy_qfunc_loss),
    "pfrl_drqn_one_step": ("eval", drqn_one_step),
    "pfrl_ppo_gaussian_loss": ("train", ppo_gaussian_loss),
    "pfrl_a2c_softmax_act": ("eval", a2c_softmax_act),
    "pfrl_sac_actor_loss": ("train", sac_actor_loss),
    "pfrl_ddpg_actor_loss": ("train", ddpg_actor_loss),
}
