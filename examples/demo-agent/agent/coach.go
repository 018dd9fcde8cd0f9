package agent

import "strings"

// coachChunks is the coach skill's long answer, one sentence per chunk: football when the text
// asks about football, basketball otherwise. Paragraphs end in a blank line, English sentences
// in a space, so the chunks concatenate into readable text.
func coachChunks(l lang, text string) []string {
	football := strings.Contains(text, "足球")
	for _, w := range englishWords(text) {
		if w == "football" || w == "soccer" {
			football = true
		}
	}
	var paragraphs [][]string
	switch {
	case l == zh && football:
		paragraphs = [][]string{
			{"踢好足球，先从控球开始。", "每天用脚内侧、脚背和脚底各颠球、拨球十分钟，让球听你的话。", "停球时身体放松，用脚接住球的力量，而不是把球弹开。"},
			{"传球要看准队友再出脚。", "短传用脚内侧推送，支撑脚指向传球方向；长传用脚背，击球的中下部。", "传完球不要站着，马上跑向新的空当。"},
			{"射门讲究的是冷静和角度。", "多练低平球打远角，守门员最难扑。", "最后，足球是十一个人的运动，多沟通、多跑位，比一个人带球更有用。"},
		}
	case l == zh:
		paragraphs = [][]string{
			{"打好篮球，先练好运球。", "手指和指根控球，不要用手掌拍，眼睛看前方而不是看球。", "左右手都要练，每天原地和行进间各运球十分钟。"},
			{"投篮讲究一个稳字。", "双脚与肩同宽，肘关节对准篮筐，出手时手腕下压，让球带着后旋飞出去。", "先在篮下练准，再一步步往后退，别急着投三分。"},
			{"防守靠的是脚步和专注。", "降低重心，保持在对手和篮筐之间，用滑步而不是交叉步移动。", "最后，篮球是团队运动，多传球、多沟通，比一个人单打更容易赢。"},
		}
	case football:
		paragraphs = [][]string{
			{"Good football starts with ball control.", "Spend ten minutes a day juggling and dribbling with the inside, the laces and the sole of your foot.", "When you receive the ball, relax and cushion it instead of letting it bounce away."},
			{"Look at your teammate before you pass.", "Push short passes with the inside of your foot, standing foot pointing where the ball should go; strike long passes with your laces, low on the ball.", "After a pass, never stand still: move into the next open space."},
			{"Shooting is about calm and angles.", "Practise low, hard shots into the far corner, the hardest ones for a goalkeeper to save.", "Above all, football is played by eleven: talking and running for each other beats dribbling alone."},
		}
	default:
		paragraphs = [][]string{
			{"Good basketball starts with dribbling.", "Control the ball with your fingertips, not your palm, and keep your eyes up instead of on the ball.", "Train both hands, ten minutes standing and ten minutes on the move every day."},
			{"Shooting is all about balance.", "Feet shoulder-width apart, elbow under the ball and pointing at the rim, and snap your wrist so the ball leaves with backspin.", "Get accurate close to the basket first, then step back little by little before trying threes."},
			{"Defence is footwork and focus.", "Stay low, keep yourself between your opponent and the basket, and slide your feet instead of crossing them.", "Above all, basketball is a team sport: pass and talk, and you will win more than playing alone."},
		}
	}
	var chunks []string
	for i, p := range paragraphs {
		for j, s := range p {
			switch {
			case j == len(p)-1 && i < len(paragraphs)-1:
				s += "\n\n"
			case j < len(p)-1 && l == en:
				s += " "
			}
			chunks = append(chunks, s)
		}
	}
	return chunks
}
