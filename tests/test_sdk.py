"""A client SDK generated from ``openapi/menus.yaml`` by openapi-python-client works against the live service.

The SDK is generated once per module into a temporary directory (never committed), imported from
there, and removed from ``sys.path`` and ``sys.modules`` afterwards. Post-generation hooks (ruff) are
switched off by a config file written into the same directory, so any warning the generator prints is
about the document itself, and ``--fail-on-warning`` makes such a warning fail the generation.
"""

from __future__ import annotations

import importlib
import inspect
import shutil
import subprocess
import sys
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
import pytest
import yaml

from data.folding import fold
from tests.live import LiveService, live_service

ROOT = Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "openapi" / "menus.yaml"
PACKAGE = "menus_sdk"  # the generated package's import name; --meta none writes it straight to the output path
REGION_COUNT = 16
DISH_COUNT = 146
PAGE_SIZE = 25
# Each diet's filter includes the diets before it.
DIETS = ["vegan", "vegetarian", "eggetarian", "pescatarian", "non_vegetarian"]
# The model each operation's 200 answer is parsed into; every documented error answer is parsed into Problem.
SUCCESS_MODELS = {
    "menus.list_regions": "RegionList",
    "menus.get_region": "MenusGetRegionResponse200",
    "menus.list_dishes": "DishPage",
    "menus.get_dish": "MenusGetDishResponse200",
    "menus.random_dishes": "DishList",
}


def openapi_python_client() -> str:
    found = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent))
    return found or "openapi-python-client"


def load_document() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    return document


def operations(document: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """operationId → (tag, operation) for every operation of the document."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for path_item in document["paths"].values():
        for method, operation in path_item.items():
            if method in {"get", "put", "post", "delete", "patch", "head", "options", "trace"}:
                found[operation["operationId"]] = (operation["tags"][0], operation)
    return found


def python_name(operation_id: str) -> str:
    return operation_id.replace(".", "_")


@dataclass(frozen=True)
class Sdk:
    output: str  # everything the generator printed

    def __getitem__(self, module: str) -> ModuleType:
        return importlib.import_module(f"{PACKAGE}.{module}" if module else PACKAGE)

    @property
    def models(self) -> ModuleType:
        return self["models"]

    def operation(self, operation_id: str) -> ModuleType:
        tag, _ = operations(load_document())[operation_id]
        return self[f"api.{tag}.{python_name(operation_id)}"]


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sdk]:
    workdir = tmp_path_factory.mktemp("sdk")
    config = workdir / "config.yaml"
    config.write_text("post_hooks: []\n", encoding="utf-8")
    command = [openapi_python_client(), "generate", "--path", str(DOCUMENT), "--output-path", str(workdir / PACKAGE),
               "--meta", "none", "--config", str(config), "--fail-on-warning"]  # fmt: skip
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert PACKAGE not in sys.modules
    sys.path.insert(0, str(workdir))
    importlib.invalidate_caches()
    try:
        yield Sdk(output)
    finally:
        sys.path.remove(str(workdir))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with live_service(tmp_path_factory.mktemp("sdk-live")) as service:
        yield service


@pytest.fixture(scope="module")
def base_url(service: LiveService) -> str:
    """The service's address joined with the document's (relative) server URL."""
    servers = load_document()["servers"]
    assert len(servers) == 1 and servers[0]["url"].startswith("/")
    return f"{service.url}{servers[0]['url']}"


@pytest.fixture(scope="module")
def client(sdk: Sdk, service: LiveService, base_url: str) -> Iterator[Any]:
    authenticated = sdk["client"].AuthenticatedClient(
        base_url=base_url, token=service.api_key("sdk"), raise_on_unexpected_status=True
    )
    with authenticated as opened:
        yield opened


@pytest.fixture(scope="module")
def every_dish(sdk: Sdk, client: Any) -> list[Any]:
    dishes, _ = page_through(sdk, client)
    return dishes


def page_through(sdk: Sdk, client: Any, **filters: Any) -> tuple[list[Any], set[int]]:
    """Every dish matching ``filters``, following ``next_cursor`` until it is None; also every ``total`` seen."""
    list_dishes = sdk.operation("menus.list_dishes")
    dishes: list[Any] = []
    totals: set[int] = set()
    cursor: str | None = None
    for _ in range(DISH_COUNT + 1):
        arguments = {**filters, "limit": PAGE_SIZE} | ({"cursor": cursor} if cursor is not None else {})
        page = list_dishes.sync(client=client, **arguments)
        assert isinstance(page, sdk.models.DishPage), page
        assert len(page.data) <= PAGE_SIZE
        dishes.extend(page.data)
        totals.add(page.total)
        cursor = page.next_cursor
        if cursor is None:
            return dishes, totals
        assert isinstance(cursor, str) and page.data
    raise AssertionError("next_cursor never became None")


def union_members(annotation: Any) -> set[Any]:
    """The members of ``Response[A | B | ...]``."""
    (parsed,) = typing.get_args(annotation)
    return set(typing.get_args(parsed)) or {parsed}


def assert_problem(sdk: Sdk, response: Any, status: HTTPStatus, code: str) -> Any:
    problem = response.parsed
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/problem+json")
    assert isinstance(problem, sdk.models.Problem), problem
    assert problem.status == status
    assert isinstance(problem.code, sdk.models.ProblemCode) and problem.code == sdk.models.ProblemCode(code)
    assert isinstance(problem.title, str) and isinstance(problem.detail, str) and isinstance(problem.type_, str)
    return problem


def test_generator_reads_the_menus_document_without_any_warning(sdk: Sdk) -> None:
    assert "Warning" not in sdk.output, sdk.output
    assert "Unable to" not in sdk.output and "skipping" not in sdk.output.lower(), sdk.output


def test_every_operation_is_generated_with_its_200_as_a_model_and_its_errors_as_problem(sdk: Sdk) -> None:
    document = load_document()
    assert set(SUCCESS_MODELS) == set(operations(document))
    for operation_id, (_, operation) in operations(document).items():
        module = sdk.operation(operation_id)
        for function in ("sync", "sync_detailed", "asyncio", "asyncio_detailed"):
            assert callable(getattr(module, function)), f"{operation_id}: no {function}"
        members = union_members(inspect.signature(module.sync_detailed).return_annotation)
        model = getattr(sdk.models, SUCCESS_MODELS[operation_id])
        # Any is the body-less 304 Not Modified; everything with a body is a model.
        assert members == {model, sdk.models.Problem, Any}, (operation_id, members)
        assert set(operation["responses"]) - {"200", "304"}, operation_id


def test_every_object_and_enum_schema_becomes_a_typed_class(sdk: Sdk) -> None:
    schemas: dict[str, Any] = load_document()["components"]["schemas"]
    for name, schema in schemas.items():
        if schema.get("type") == "object" or "enum" in schema or len(schema.get("allOf", [])) > 1:
            assert hasattr(sdk.models, name), f"no class for schema {name}"
        elif len(schema.get("allOf", [])) == 1:  # a one-member allOf is that member
            assert hasattr(sdk.models, schema["allOf"][0]["$ref"].rsplit("/", 1)[1]), name
    fields = {model: {field.name: field.type for field in attrs.fields(getattr(sdk.models, model))}
              for model in ("DishPage", "Dish", "Region", "RegionWithDishes", "Problem")}  # fmt: skip
    assert fields["DishPage"] == {"data": "list[Dish]", "total": "int", "next_cursor": "None | str"}
    assert fields["Dish"]["course"] == "Course" and fields["Dish"]["diet"] == "Diet"
    assert fields["Dish"]["local_name"] == "None | str" and fields["Dish"]["region"] == "RegionSummary"
    assert fields["Region"]["kind"] == "RegionKind" and fields["Region"]["dish_count"] == "int"
    assert fields["RegionWithDishes"]["dishes"] == "list[DishFields]"
    assert fields["Problem"]["code"] == "ProblemCode"
    assert fields["Problem"]["invalid_params"] == "list[InvalidParam] | Unset"


def test_list_regions_gives_sixteen_typed_regions_sorted_by_name(sdk: Sdk, client: Any) -> None:
    response = sdk.operation("menus.list_regions").sync_detailed(client=client)
    regions = response.parsed
    assert response.status_code == HTTPStatus.OK
    assert isinstance(regions, sdk.models.RegionList)
    assert regions.total == REGION_COUNT == len(regions.data)
    assert all(isinstance(region, sdk.models.Region) for region in regions.data)
    assert [region.name for region in regions.data] == [
        region.name for region in sorted(regions.data, key=lambda region: (fold(region.name), region.slug))
    ]
    assert all(isinstance(region.kind, sdk.models.RegionKind) for region in regions.data)
    assert sum(region.dish_count for region in regions.data) == DISH_COUNT
    kerala = next(region for region in regions.data if region.slug == "kerala")
    assert kerala.country_code == "IN" and kerala.kind == sdk.models.RegionKind.STATE


def test_following_next_cursor_until_none_gives_every_dish_once(sdk: Sdk, client: Any) -> None:
    dishes, totals = page_through(sdk, client)
    assert totals == {DISH_COUNT}
    assert len(dishes) == len({dish.slug for dish in dishes}) == DISH_COUNT
    assert all(isinstance(dish, sdk.models.Dish) for dish in dishes)
    assert all(isinstance(dish.region, sdk.models.RegionSummary) for dish in dishes)
    assert [(fold(dish.name), dish.slug) for dish in dishes] == sorted((fold(dish.name), dish.slug) for dish in dishes)


def test_course_diet_and_max_spice_filters_give_exactly_the_matching_dishes(
    sdk: Sdk, client: Any, every_dish: list[Any]
) -> None:
    course, diet, max_spice = sdk.models.Course.MAIN, sdk.models.Diet.VEGETARIAN, 2
    suitable = set(DIETS[: DIETS.index(diet.value) + 1])
    dishes, totals = page_through(sdk, client, course=course, diet=diet, max_spice=max_spice)
    expected = [
        dish.slug
        for dish in every_dish
        if dish.course == course and dish.diet.value in suitable and dish.spice_level <= max_spice
    ]
    assert expected and [dish.slug for dish in dishes] == expected
    assert totals == {len(expected)}
    assert all(isinstance(dish.course, sdk.models.Course) and isinstance(dish.diet, sdk.models.Diet) for dish in dishes)


def test_q_ignores_accents_and_case(sdk: Sdk, client: Any) -> None:
    page = sdk.operation("menus.list_dishes").sync(client=client, q="creme BRULEE")
    assert isinstance(page, sdk.models.DishPage)
    assert [dish.name for dish in page.data] == ["Crème brûlée"]
    assert page.total == 1 and page.next_cursor is None


def test_get_dish_gives_a_typed_dish(sdk: Sdk, client: Any) -> None:
    response = sdk.operation("menus.get_dish").sync_detailed(client=client, slug="creme-brulee")
    assert response.status_code == HTTPStatus.OK
    assert isinstance(response.parsed, sdk.models.MenusGetDishResponse200)
    dish = response.parsed.data
    assert isinstance(dish, sdk.models.Dish)
    assert (dish.slug, dish.name) == ("creme-brulee", "Crème brûlée")
    assert dish.course == sdk.models.Course.DESSERT and isinstance(dish.diet, sdk.models.Diet)
    assert isinstance(dish.region, sdk.models.RegionSummary) and dish.region.slug == "paris"
    assert all(isinstance(ingredient, str) for ingredient in dish.ingredients)


def test_get_region_gives_its_dishes_typed(sdk: Sdk, client: Any) -> None:
    response = sdk.operation("menus.get_region").sync_detailed(client=client, slug="kerala")
    assert isinstance(response.parsed, sdk.models.MenusGetRegionResponse200)
    region = response.parsed.data
    assert isinstance(region, sdk.models.RegionWithDishes) and region.slug == "kerala"
    assert len(region.dishes) == region.dish_count > 0
    assert all(isinstance(dish, sdk.models.DishFields) for dish in region.dishes)


def test_unknown_dish_slug_gives_a_typed_not_found_problem(sdk: Sdk, client: Any) -> None:
    response = sdk.operation("menus.get_dish").sync_detailed(client=client, slug="unicorn-stew")
    problem = assert_problem(sdk, response, HTTPStatus.NOT_FOUND, "not_found")
    assert "unicorn-stew" in problem.detail
    assert sdk.operation("menus.get_dish").sync(client=client, slug="unicorn-stew") == problem


def test_parameter_cursor_and_key_errors_give_typed_problems(sdk: Sdk, client: Any, base_url: str) -> None:
    list_dishes = sdk.operation("menus.list_dishes")
    problem = assert_problem(
        sdk, list_dishes.sync_detailed(client=client, max_spice=9), HTTPStatus.BAD_REQUEST, "invalid_parameter"
    )
    assert isinstance(problem.invalid_params, list) and problem.invalid_params
    assert all(isinstance(param, sdk.models.InvalidParam) for param in problem.invalid_params)
    assert [param.name for param in problem.invalid_params] == ["max_spice"]
    cursor = list_dishes.sync(client=client, limit=1).next_cursor
    problem = assert_problem(
        sdk, list_dishes.sync_detailed(client=client, limit=1, cursor=cursor, course=sdk.models.Course.MAIN),
        HTTPStatus.BAD_REQUEST, "invalid_cursor",
    )  # fmt: skip
    assert isinstance(problem.invalid_params, sdk["types"].Unset)
    with sdk["client"].AuthenticatedClient(base_url=base_url, token="rmk_" + "A" * 43) as stranger:
        response = sdk.operation("menus.list_regions").sync_detailed(client=stranger)
    assert_problem(sdk, response, HTTPStatus.UNAUTHORIZED, "unauthorized")
