"""``GatewayError.from_response``: every error body the gateway sends, and the reference server's.

Run: ``cd packages/server/python && python3 -m unittest tests.test_client_errors -v``
"""

from __future__ import annotations

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from portico.client import GatewayError  # noqa: E402


def error(status: int, body: object) -> GatewayError:
    return GatewayError.from_response(status, json.dumps(body).encode("utf-8") if not isinstance(body, bytes) else body)


class FromResponse(unittest.TestCase):
    def test_a_string_detail_with_code_and_message_beside_it(self) -> None:
        err = error(404, {"detail": "Interface 'x' not found", "code": "not_found", "message": "Interface 'x' not found"})
        self.assertEqual((err.code, err.status, err.message), ("not_found", 404, "Interface 'x' not found"))
        self.assertEqual(str(err), "not_found: Interface 'x' not found")

    def test_issues_and_exception_beside_a_string_detail(self) -> None:
        err = error(502, {"detail": "died", "code": "worker_crashed", "message": "died", "issues": [{"path": "a", "message": "m"}], "exception": "X"})
        self.assertEqual((err.code, err.issues, err.exception), ("worker_crashed", [{"path": "a", "message": "m"}], "X"))

    def test_a_400_keeps_its_structured_detail(self) -> None:
        body = {"detail": {"code": "invalid_config", "message": "bad", "issues": [{"path": "lr", "message": "not a float"}]}, "code": "invalid_config", "message": "bad"}
        err = error(400, body)
        self.assertEqual((err.code, err.message, err.issues), ("invalid_config", "bad", [{"path": "lr", "message": "not a float"}]))

    def test_the_structured_detail_alone_as_earlier_gateways_sent_it(self) -> None:
        err = error(409, {"detail": {"code": "read_only", "message": "no changes"}, "message": "no changes"})
        self.assertEqual((err.code, err.message), ("read_only", "no changes"))

    def test_a_validation_error(self) -> None:
        err = error(422, {"detail": [{"type": "missing", "loc": ["body", "target"], "msg": "Field required"}], "code": "validation_error", "message": "Invalid request"})
        self.assertEqual((err.code, err.issues), ("validation_error", [{"path": "body.target", "message": "Field required"}]))

    def test_the_reference_servers_string_detail(self) -> None:
        err = error(404, {"detail": "Not Found"})
        self.assertEqual((err.code, err.message), ("http_404", "Not Found"))

    def test_a_body_that_is_not_json(self) -> None:
        err = error(500, b"Internal Server Error")
        self.assertEqual((err.code, err.message), ("http_500", "Internal Server Error"))


if __name__ == "__main__":
    unittest.main()
