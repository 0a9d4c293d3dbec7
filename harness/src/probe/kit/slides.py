import io, zipfile
from pptx import Presentation
prs = Presentation()
slide = prs.slides.add_slide(prs.slide_layouts[1])
slide.shapes.title.text = "Inventory"
slide.placeholders[1].text = "Stock count for the inventory project: 42 items."
buf = io.BytesIO(); prs.save(buf)
# Fixed zip dates, members in the order python-pptx wrote them: the same bytes every time.
src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
out = io.BytesIO()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    for info in src.infolist():
        fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
        fixed.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(fixed, src.read(info.filename))
open("/work/main/harness/src/probe/kit/slides.pptx", "wb").write(out.getvalue())
