"""The local stand-in for an inference-component endpoint, beside the multi-model routes.

`POST /inference-components/<name>/invoke` (and `POST /invocations` with the
X-Amzn-SageMaker-Inference-Component header, as InvokeEndpoint sends InferenceComponentName) runs the archive
that the build's manifest (`manifest.json` in the models directory) places on that inference component. Only
the route is the component's: the archive runs in the same local Triton and counts against the same model
budget, so a local run shows the client routing both kinds, not a component's own copies or scaling.
"""

from __future__ import annotations

from http import HTTPStatus
from pathlib import Path
from urllib.parse import unquote

from triton_mme.client.transport import LOCAL_COMPONENT_ROUTE
from triton_mme.core.errors import UserError, first_line, quoted
from triton_mme.core.locations import MANIFEST_FILE_NAME
from triton_mme.core.manifest import Manifest
from triton_mme.core.naming import (
    INFERENCE_COMPONENT_NAME,
    LOCAL_COMPONENT_ENDPOINT,
    inference_component_name,
)
from triton_mme.core.suggest import known_names
from triton_mme.local_triton.loader import ModelError

# InvokeEndpoint's InferenceComponentName travels in this header (botocore's sagemaker-runtime service model).
COMPONENT_HEADER = "X-Amzn-SageMaker-Inference-Component"


def component_in_path(path: str) -> str | None:
    """The component a `/inference-components/<name>/invoke` path names; None for any other path."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if len(parts) == 3 and parts[0] == LOCAL_COMPONENT_ROUTE and parts[1] and parts[2] == "invoke":
        return unquote(parts[1])
    return None


class ComponentRoutes:
    """Which archive each inference component serves, read from the models directory's manifest at each
    request (a rebuild while serving is seen at once)."""

    def __init__(self, models_dir: Path):
        self.manifest_path = models_dir / MANIFEST_FILE_NAME

    def components(self) -> dict[str, str]:
        """Inference component -> TargetModel, for the archives the manifest places on one."""
        if not self.manifest_path.is_file():
            return {}
        try:
            manifest = Manifest.read(self.manifest_path)
        except (OSError, UserError, ValueError) as error:
            raise ModelError(
                HTTPStatus.INTERNAL_SERVER_ERROR, f"{self.manifest_path}: {first_line(error)}"
            ) from None
        return {
            inference_component_name(LOCAL_COMPONENT_ENDPOINT, record.name): record.target_model
            for record in manifest.archives
            if record.is_dedicated
        }

    def target_model(self, component: str) -> str:
        """The TargetModel behind a component; ModelError 400 for a name outside SageMaker's rule, 404 for one
        the manifest does not place (as InvokeEndpoint answers a component the endpoint does not host)."""
        if not INFERENCE_COMPONENT_NAME.match(component):
            raise ModelError(
                HTTPStatus.BAD_REQUEST,
                f"inference component {quoted(component)} is {INFERENCE_COMPONENT_NAME.refusal}",
            )
        known = self.components()
        if component not in known:
            names = known_names(component, known.keys())
            raise ModelError(
                HTTPStatus.NOT_FOUND,
                f"no inference component {quoted(component)} in {self.manifest_path}; {names}",
            )
        return known[component]
