"""The app against its own OpenAPI document, with schemathesis: for requests generated from the
document, every answer is one the document declares (status, media type, headers, body schema)
and none is a 500."""

from __future__ import annotations

from typing import Any

import hypothesis
import schemathesis
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from service.admin import create_api_key

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def test_answers_conform_to_the_document(app: Any) -> None:
    with app.state.sessionmaker() as session:
        auth = {"Authorization": f"Bearer {create_api_key(session, 'conformance')}"}
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 17

    for operation in operations:
        modes = [GenerationMode.POSITIVE]
        if list(operation.iter_parameters()) or operation.body:
            # Invalid requests too (a body that is not JSON, a parameter out of its bounds):
            # their refusals must be declared as well.
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:

            @hypothesis.settings(
                max_examples=12,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(hypothesis.HealthCheck),
            )
            @hypothesis.given(case=operation.as_strategy(mode))
            def conforms(case: Any) -> None:
                case.call_and_validate(headers=auth, checks=CHECKS)

            conforms()
