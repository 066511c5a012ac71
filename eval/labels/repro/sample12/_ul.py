"""Import helper for ultralytics repros: ultralytics is installed without its dependencies, so stub the
missing optional/third-party modules (cv2, torchvision, PIL, ...) and answer version() for them."""
import importlib.metadata as md
_v = md.version
def _version(name):
    try: return _v(name)
    except md.PackageNotFoundError: return "0.0.0"
md.version = _version
from _util import stub_missing
stub_missing("ultralytics")
