"""Write ``workpiece.stl``: a small curved panel for the reachability examples and tests.

The panel is an open sheet (one surface, normals up) of 0.40 m x 0.70 m, bent along y
(a 0.9 m radius) and tilted 15 degrees about y, lying in front of a robot at the origin:
x in [0.25, 0.65] m, its top about 0.15-0.25 m above the robot's base. Deterministic:
running the script again writes the same file. Needs trimesh (``stackik[reach]``).

    python examples/data/make_workpiece.py
"""

from pathlib import Path

import numpy as np


def panel(nx: int = 16, ny: int = 28) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and triangles of the bent, tilted sheet (counter-clockwise from above)."""
    u = np.linspace(-0.20, 0.20, nx + 1)
    v = np.linspace(-0.35, 0.35, ny + 1)
    U, V = np.meshgrid(u, v, indexing="ij")
    radius = 0.9
    theta = V / radius
    y = radius * np.sin(theta)
    z = radius * (np.cos(theta) - 1.0)  # bent down toward the ends of the panel
    tilt = np.deg2rad(15.0)
    x = U * np.cos(tilt)
    z = z + U * np.sin(tilt)
    pts = np.stack([x + 0.45, y, z + 0.20], axis=-1).reshape(-1, 3)
    idx = np.arange((nx + 1) * (ny + 1)).reshape(nx + 1, ny + 1)
    a, b = idx[:-1, :-1].ravel(), idx[1:, :-1].ravel()
    c, d = idx[1:, 1:].ravel(), idx[:-1, 1:].ravel()
    faces = np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])
    return pts, faces


def main() -> None:
    import trimesh

    pts, faces = panel()
    mesh = trimesh.Trimesh(pts, faces, process=False)
    if mesh.face_normals[:, 2].mean() < 0:  # normals up: the tool comes from above
        mesh.invert()
    out = Path(__file__).with_name("workpiece.stl")
    mesh.export(out)
    print(f"wrote {out}: {len(mesh.faces)} triangles, {mesh.area:.3f} m^2")


if __name__ == "__main__":
    main()
