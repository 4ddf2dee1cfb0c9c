"""Configuration: models, loading and the embedded default (mock agents)."""

from freemad.config.load import config_digest, default_config, load_config, parse_config
from freemad.config.models import AgentConfig, AgentType, FreemadConfig, LocatedValueError, Mode

__all__ = [
    "AgentConfig",
    "AgentType",
    "FreemadConfig",
    "LocatedValueError",
    "Mode",
    "config_digest",
    "default_config",
    "load_config",
    "parse_config",
]
