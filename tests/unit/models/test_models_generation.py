"""GenerationConfig: what the backends take of a run's settings."""

from pytest_humanfix.models.generation import GenerationConfig
from pytest_humanfix.settings import Settings


def test_of_takes_the_settings_the_backends_read():
    config = GenerationConfig.of(Settings(
        prompt="primed", temperature=0.4, max_new_tokens=64, max_length=900, seed=7,
        base_url="http://a:1/v1,http://b:2/v1", request_timeout=12.5, engine="vllm",
        deterministic="on"))
    assert config == GenerationConfig(
        prompt="primed", temperature=0.4, max_new_tokens=64, max_length=900, seed=7,
        base_urls=("http://a:1/v1", "http://b:2/v1"), request_timeout=12.5, engine="vllm",
        determinism=True)


def test_the_defaults_are_those_of_default_settings():
    assert GenerationConfig.of(Settings()) == GenerationConfig()
