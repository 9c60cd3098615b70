"""docs/first-deploy.md prices the defaults from the platform table: the figures follow the table and the
settings' defaults, so a changed price or default shows up as a failing doc."""

from __future__ import annotations

from pathlib import Path

from triton_mme.core.platform import (
    PLATFORM,
    hourly_price,
)
from triton_mme_cdk.settings import Settings

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "first-deploy.md").read_text(encoding="utf-8")


def dollars(amount: float) -> str:
    return f"${amount:,.2f}"


def test_the_monthly_cost_of_the_defaults_comes_from_the_platform_table() -> None:
    settings = Settings()
    price = hourly_price(settings.endpoint.instance_type, "us-east-1")
    assert price is not None
    assert f"{settings.endpoint.instance_type} at ${price:g}/hour" in PAGE
    assert settings.scaling.min_instance_count == settings.scaling.initial_instance_count == 2
    assert (
        dollars(settings.scaling.min_instance_count * price * PLATFORM.prices.hours_per_month.value) in PAGE
    )  # $2,055.68
    assert (
        dollars(settings.scaling.max_instance_count * price * PLATFORM.prices.hours_per_month.value) in PAGE
    )  # $5,139.20


def test_the_second_fleet_of_an_update_is_priced_for_its_longest_duration() -> None:
    settings = Settings()
    price = hourly_price(settings.endpoint.instance_type, "us-east-1")
    assert price is not None and settings.updates.strategy.is_blue_green
    hours = settings.updates.timeout_seconds / 3600
    assert dollars(settings.scaling.min_instance_count * price * hours) in PAGE  # $5.63
    assert dollars(settings.scaling.max_instance_count * price * hours) in PAGE  # $14.08


def test_the_page_says_plainly_that_it_never_ran_on_aws_and_how_to_tear_down() -> None:
    assert "This stack has not been deployed to an AWS account yet." in PAGE
    assert "    make destroy" in PAGE
