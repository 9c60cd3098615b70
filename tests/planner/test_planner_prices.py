"""Prices: the dated table, your own figures, the AWS Price List API (offline, with botocore's Stubber)."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from triton_mme.core.platform import PLATFORM
from triton_mme.planner.prices import (
    PriceBook,
    PriceError,
    parse_price,
    price_list_hourly_usd,
    read_price_file,
)


def test_the_table_is_dated_sourced_and_marked_inferred() -> None:
    price = PriceBook("us-east-1").price("ml.g4dn.xlarge")
    assert price is not None and price.usd_per_hour == 0.736
    assert "2025-10" in price.source and "inferred" in price.source and not price.confirmed
    assert all(p.as_of and p.source for p in PLATFORM.hourly_prices.values())
    assert PriceBook("eu-west-1").price("ml.g4dn.xlarge") is None
    assert PLATFORM.prices.hours_per_month.value == 730


def test_given_prices_come_first(tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text("ml.g5.xlarge: 1.2\nml.g4dn.xlarge: 0.5\n")
    given = read_price_file(tmp_path / "prices.yaml")
    given.update([parse_price("ml.g5.xlarge=1.1")])
    book = PriceBook("eu-west-1", given)
    assert book.price("ml.g5.xlarge").usd_per_hour == 1.1  # type: ignore[union-attr]
    assert book.price("ml.g4dn.xlarge").source == "given"  # type: ignore[union-attr]


@pytest.mark.parametrize("text", ["ml.g5.xlarge", "ml.g5.xlarge=free", "g5.xlarge=1", "ml.g5.xlarge=-1"])
def test_a_bad_price_is_one_line(text: str) -> None:
    with pytest.raises(PriceError, match=r"allowed TYPE=USD_PER_HOUR, e\.g\. ml\.g5\.xlarge=1\.408"):
        parse_price(text)


def _product(*dimensions: tuple[str, str]) -> str:
    priced = {
        f"SKU.TERM.{i}": {"unit": unit, "pricePerUnit": {"USD": usd}, "description": "test"}
        for i, (unit, usd) in enumerate(dimensions)
    }
    return json.dumps(
        {
            "product": {"attributes": {"instanceName": "ml.g5.xlarge"}},
            "terms": {"OnDemand": {"SKU.TERM": {"priceDimensions": priced}}},
        }
    )


def _expected(instance_type: str = "ml.g5.xlarge", region: str = "us-east-1") -> dict[str, object]:
    return {
        "ServiceCode": "AmazonSageMaker",
        "Filters": [
            {"Type": "TERM_MATCH", "Field": "instanceName", "Value": instance_type},
            {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
            {"Type": "TERM_MATCH", "Field": "component", "Value": "Hosting"},
        ],
    }


def _pricing() -> tuple[object, Stubber]:
    client = boto3.client(
        "pricing", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    return client, Stubber(client)


def test_the_price_list_api_gives_the_hosting_price_per_hour() -> None:
    client, stubber = _pricing()
    stubber.add_response("get_products", {"PriceList": [_product(("Hrs", "1.4080000000"))]}, _expected())
    with stubber:
        assert price_list_hourly_usd(client, "ml.g5.xlarge", "us-east-1") == 1.408
        stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    ("products", "message"),
    [
        ([], "0 hosting products match; expected exactly 1"),
        ([_product(("Hrs", "1")), _product(("Hrs", "2"))], "2 hosting products match"),
        ([_product(("GB-Mo", "0.1"))], "expected one on-demand hourly USD price, found 0"),
    ],
)
def test_an_ambiguous_price_list_answer_is_refused(products: list[str], message: str) -> None:
    client, stubber = _pricing()
    stubber.add_response("get_products", {"PriceList": products}, _expected())
    with (
        stubber,
        pytest.raises(PriceError, match=r"^Price List API, ml\.g5\.xlarge in us-east-1: ") as caught,
    ):
        price_list_hourly_usd(client, "ml.g5.xlarge", "us-east-1")
    assert message in str(caught.value)


def test_an_api_error_is_one_line_and_the_book_remembers_answers() -> None:
    client, stubber = _pricing()
    stubber.add_response(
        "get_products", {"PriceList": [_product(("Hrs", "0.75"))]}, _expected("ml.g4dn.xlarge")
    )
    stubber.add_client_error("get_products", "AccessDeniedException", "not allowed", 400)
    book = PriceBook("us-east-1", client=client)
    with stubber:
        first = book.price("ml.g4dn.xlarge")
        assert first is not None and first.usd_per_hour == 0.75 and first.confirmed
        assert book.price("ml.g4dn.xlarge") == first  # asked once
        with pytest.raises(
            PriceError, match=r"ml\.g5\.xlarge in us-east-1: AccessDeniedException: not allowed$"
        ):
            book.price("ml.g5.xlarge")
