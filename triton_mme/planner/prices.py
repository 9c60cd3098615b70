"""Hourly prices per instance type: your figures first, then the AWS Price List API (when asked, with
credentials), then the platform table's dated, inferred copy; unknown where none has one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from triton_mme.core.bounded import DocumentError, load_json, load_yaml, read_bytes
from triton_mme.core.errors import UserError, describe_aws_error, quoted
from triton_mme.core.limits import MAX_PRICE_FILE_BYTES, MAX_REPLY_BYTES
from triton_mme.core.platform import PLATFORM


class PriceError(UserError, ValueError):
    """A price that cannot be read or looked up; one line."""


class Price(BaseModel):
    """An hourly price and where it came from (the plan JSON's `price`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    usd_per_hour: float
    source: str
    confirmed: bool


def parse_price(text: str) -> tuple[str, float]:
    """`ml.g5.xlarge=1.408` -> ('ml.g5.xlarge', 1.408)."""
    instance_type, _, usd = text.partition("=")
    try:
        value = float(usd)
    except ValueError:
        value = -1.0
    if not instance_type.startswith("ml.") or not 0 < value < 1000:
        raise PriceError(f"--price {quoted(text)}: allowed TYPE=USD_PER_HOUR, e.g. ml.g5.xlarge=1.408")
    return instance_type, value


def read_price_file(path: Path) -> dict[str, float]:
    """A YAML or JSON mapping of instance type to USD per hour."""
    try:
        raw = load_yaml(
            read_bytes(path, max_bytes=MAX_PRICE_FILE_BYTES), where=str(path), max_bytes=MAX_PRICE_FILE_BYTES
        )
    except DocumentError as error:
        raise PriceError(str(error)) from None
    except yaml.YAMLError:
        raise PriceError(f"{path}: not valid YAML or JSON") from None
    if not isinstance(raw, dict):
        raise PriceError(f"{path}: expected a mapping of instance type to USD per hour")
    return dict(parse_price(f"{key}={value}") for key, value in raw.items())


def price_list_hourly_usd(client: Any, instance_type: str, region: str) -> float:
    """On-demand USD per hour of SageMaker hosting on `instance_type` in `region`, from the Price List API
    (`pricing` client, `get_products`): exactly one product and one hourly price dimension, or an error."""
    filters = [
        {"Type": "TERM_MATCH", "Field": field, "Value": value}
        for field, value in (
            ("instanceName", instance_type),
            ("regionCode", region),
            ("component", PLATFORM.prices.price_list_api.hosting_component),
        )
    ]
    products: list[dict[str, Any]] = []
    for page in client.get_paginator("get_products").paginate(
        ServiceCode=PLATFORM.prices.price_list_api.service_code, Filters=filters
    ):
        products += [
            load_json(item, where="Price List API", max_bytes=MAX_REPLY_BYTES) for item in page["PriceList"]
        ]
    where = f"Price List API, {instance_type} in {region}"
    if len(products) != 1:
        raise PriceError(f"{where}: {len(products)} hosting products match; expected exactly 1")
    on_demand = products[0].get("terms", {}).get("OnDemand", {})
    hourly = [
        dimension
        for term in on_demand.values()
        for dimension in term.get("priceDimensions", {}).values()
        if str(dimension.get("unit", "")).lower() == PLATFORM.prices.price_list_api.hourly_unit.lower()
    ]
    if len(hourly) != 1 or "USD" not in hourly[0].get("pricePerUnit", {}):
        raise PriceError(f"{where}: expected one on-demand hourly USD price, found {len(hourly)}")
    return float(hourly[0]["pricePerUnit"]["USD"])


class PriceBook:
    """Prices of one region: given figures, then the Price List API (with `client`), then the table."""

    def __init__(self, region: str, given: dict[str, float] | None = None, client: Any = None):
        self.region = region
        self.given = dict(given or {})
        self.client = client
        self._fetched: dict[str, Price | None] = {}

    def price(self, instance_type: str) -> Price | None:
        if instance_type in self.given:
            return Price(usd_per_hour=self.given[instance_type], source="given", confirmed=True)
        if self.client is not None:
            if instance_type not in self._fetched:
                self._fetched[instance_type] = self._from_api(instance_type)
            return self._fetched[instance_type]
        listed = PLATFORM.hourly_prices.get((instance_type, self.region))
        if listed is None:
            return None
        source = f"{listed.source}, {listed.as_of}, inferred"
        return Price(usd_per_hour=listed.usd, source=source, confirmed=listed.confirmed)

    def _from_api(self, instance_type: str) -> Price:
        try:
            usd = price_list_hourly_usd(self.client, instance_type, self.region)
        except PriceError:
            raise
        except Exception as error:  # botocore's ClientError, NoCredentialsError, ...: one line either way
            raise PriceError(
                f"Price List API, {instance_type} in {self.region}: {describe_aws_error(error)}"
            ) from None
        return Price(usd_per_hour=usd, source="AWS Price List API", confirmed=True)


def pricing_client() -> Any:
    """A `pricing` client where the Price List API answers; one retry at most, short timeouts."""
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"total_max_attempts": 2, "mode": "standard"}, connect_timeout=10, read_timeout=30
    )
    return boto3.client("pricing", region_name=PLATFORM.prices.price_list_api.region, config=config)
